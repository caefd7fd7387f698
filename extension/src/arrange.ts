/**
 * The first view of a board in a container of a given width: every node inside it, at a
 * zoom where labels stay readable (look.json view.min_label_px). Pure functions, no DOM
 * (test/arrange.test.ts checks them).
 *
 * Python lays the graph out for a fixed page (d2_notebook/notebook/layout.py: each
 * hypothesis a row, its evidence in a grid beside it). Here the same rows are laid out
 * again for the width the output really has: each row's evidence grid takes as many
 * columns as fit and grows downwards, so nothing is cut off on the right; and when the
 * board is taller than look.json view.fold_above_px, the evidence of each hypothesis is
 * folded into one node ("6 evidence · 4 supports · 2 contradicts") that expands on
 * click, rather than shrinking everything. Hidden statuses leave no holes: only what is
 * shown is laid out.
 */
import look from './look.json';
import { IElement, IFilter, ISnapshot, readableZoom, snapshotElements } from './elements';

const SIZES = look.sizes;
const RULES = look.layout;
const VIEW = look.view;

/** Which hypotheses show their evidence: those named, or all of them. */
export type Expanded = ReadonlySet<string> | 'all';

/** A laid-out graph: its elements with positions, and the viewport that shows it all. */
export interface IArrangement {
  elements: IElement[];
  /** Hypotheses whose evidence is folded into one node. */
  folded: string[];
  zoom: number;
  pan: { x: number; y: number };
  /** The container height (px) that shows the whole graph at `zoom`. */
  heightPx: number;
}

/** The id of the node that stands for the folded evidence of `hypothesisId`. */
export function foldId(hypothesisId: string): string {
  return `fold:${hypothesisId}`;
}

interface IRow {
  hypothesis: IElement;
  evidence: IElement[];
}

/**
 * Lay out `snapshot` under `filter` for a container `widthPx` wide.
 *
 * @param expanded hypotheses whose evidence stays unfolded even on a tall board.
 */
export function arrange(snapshot: ISnapshot, filter: IFilter, expanded: Expanded,
  widthPx: number): IArrangement {
  const elements = snapshotElements(snapshot, filter);
  const nodes = elements.filter(e => e.group === 'nodes');
  const hypotheses = nodes.filter(n => n.data.kind === 'hypothesis')
    .sort((a, b) => a.position!.y - b.position!.y || a.position!.x - b.position!.x);
  const rows = new Map<string, IRow>(hypotheses.map(h => [h.data.id, { hypothesis: h, evidence: [] }]));
  const loose: IElement[] = [];
  const homes = evidenceHomes(snapshot);
  for (const node of nodes.filter(n => n.data.kind === 'evidence')
    .sort((a, b) => a.position!.x - b.position!.x || a.position!.y - b.position!.y)) {
    const row = rows.get(String(node.data.home ?? homes.get(node.data.id) ?? ''));
    (row ? row.evidence : loose).push(node);
  }
  const room = Math.max(widthPx - 2 * VIEW.padding, 1);
  const minLeft = Math.min(...hypotheses.map(h => h.position!.x - SIZES.hypothesis_width / 2), 0);
  const evidenceLeft = (row: IRow) =>
    row.hypothesis.position!.x - minLeft + SIZES.hypothesis_width / 2 + RULES.evidence_gap;
  const widest = Math.max(...[...rows.values()].map(evidenceLeft), SIZES.hypothesis_width +
    RULES.evidence_gap) + SIZES.evidence_width;
  const zoom = Math.max(readableZoom(), Math.min(1, room / widest));
  const columns = (left: number) => Math.max(1,
    Math.floor((room / zoom - left - SIZES.evidence_width) / RULES.evidence_step_x) + 1);

  const foldable = (row: IRow) => row.evidence.length > 1 &&
    (expanded !== 'all' && !expanded.has(row.hypothesis.data.id));
  const tall = height([...rows.values()], () => false, columns, evidenceLeft, loose) * zoom >
    VIEW.fold_above_px;
  const isFolded = (row: IRow) => tall && foldable(row);

  const placed: IElement[] = [];
  const folded: string[] = [];
  let top = 0;
  for (const row of rows.values()) {
    const h = row.hypothesis;
    placed.push({ ...h, position: { x: h.position!.x - minLeft, y: top + SIZES.hypothesis_height / 2 } });
    const left = evidenceLeft(row);
    let gridRows = 0;
    if (isFolded(row)) {
      folded.push(h.data.id);
      placed.push(foldNode(row, left, top));
      gridRows = 1;
    } else {
      const cols = columns(left);
      row.evidence.forEach((node, slot) => {
        placed.push({ ...node, position: cell(left, top, slot % cols, Math.floor(slot / cols)) });
      });
      gridRows = Math.ceil(row.evidence.length / cols);
    }
    top += Math.max(SIZES.hypothesis_height, gridHeight(gridRows)) + RULES.block_gap;
  }
  const looseLeft = hypotheses.length ? SIZES.hypothesis_width + RULES.evidence_gap : 0;
  const looseColumns = columns(looseLeft);
  loose.forEach((node, slot) => {
    placed.push({ ...node, position: cell(looseLeft, top, slot % looseColumns,
      Math.floor(slot / looseColumns)) });
  });
  const shown = new Set(placed.map(node => node.data.id));
  const edges = elements.filter(e => e.group === 'edges' &&
    shown.has(String(e.data.source)) && shown.has(String(e.data.target)));
  const box = boundingBox(placed);
  return {
    elements: [...placed, ...edges], folded, zoom,
    pan: { x: VIEW.padding - box.x1 * zoom, y: VIEW.padding - box.y1 * zoom },
    heightPx: Math.ceil((box.y2 - box.y1) * zoom + 2 * VIEW.padding)
  };
}

/**
 * The hypothesis each evidence sits beside when its node does not say (snapshots older
 * than data.home): the target of its first link, else the first hypothesis it
 * suggested; the rule of layout.py's evidence_homes.
 */
function evidenceHomes(snapshot: ISnapshot): Map<string, string> {
  const homes = new Map<string, string>();
  const edges = snapshot.graph.edges;
  for (const edge of edges.filter(e => e.kind !== 'refines' && e.kind !== 'motivates')) {
    if (!homes.has(edge.source)) {
      homes.set(edge.source, edge.target);
    }
  }
  for (const edge of edges.filter(e => e.kind === 'motivates')) {
    if (!homes.has(edge.source)) {
      homes.set(edge.source, edge.target);
    }
  }
  return homes;
}

function foldNode(row: IRow, left: number, top: number): IElement {
  const stances = new Map<string, number>();
  for (const node of row.evidence) {
    const stance = String(node.data.stance ?? 'context');
    stances.set(stance, (stances.get(stance) ?? 0) + 1);
  }
  const counts = ['supports', 'contradicts', 'weak', 'neutral', 'context']
    .filter(stance => stances.has(stance))
    .map(stance => `${stances.get(stance)} ${stance === 'context' ? 'exploration' : stance}`);
  const id = row.hypothesis.data.id;
  const fills = look.evidence_colors as { [key: string]: string };
  const borders = look.evidence_borders as { [key: string]: string };
  return {
    group: 'nodes', classes: 'evidence fold', position: cell(left, top, 0, 0),
    data: {
      id: foldId(id), kind: 'fold', home: id,
      label: `▸ ${row.evidence.length} evidence\n${counts.join(' · ')}`,
      color: fills.context, border: borders.context,
      width: SIZES.evidence_width, height: SIZES.evidence_height,
      hover: `${row.evidence.length} evidence on ${id} (${counts.join(', ')}): click to show them`
    }
  };
}

function height(rows: IRow[], folded: (row: IRow) => boolean, columns: (left: number) => number,
  evidenceLeft: (row: IRow) => number, loose: IElement[]): number {
  let total = 0;
  for (const row of rows) {
    const gridRows = folded(row) ? 1 : Math.ceil(row.evidence.length / columns(evidenceLeft(row)));
    total += Math.max(SIZES.hypothesis_height, gridHeight(gridRows)) + RULES.block_gap;
  }
  const looseColumns = columns(SIZES.hypothesis_width + RULES.evidence_gap);
  return total + gridHeight(Math.ceil(loose.length / looseColumns));
}

function cell(left: number, top: number, column: number, row: number): { x: number; y: number } {
  return { x: left + SIZES.evidence_width / 2 + column * RULES.evidence_step_x,
           y: top + SIZES.evidence_height / 2 + row * RULES.evidence_step_y };
}

function gridHeight(rows: number): number {
  return rows === 0 ? 0 : (rows - 1) * RULES.evidence_step_y + SIZES.evidence_height;
}

/** The model-space box around `nodes` (their centres plus half their size). */
export function boundingBox(nodes: IElement[]): { x1: number; y1: number; x2: number; y2: number } {
  if (!nodes.length) {
    return { x1: 0, y1: 0, x2: 0, y2: 0 };
  }
  const half = (node: IElement, key: 'width' | 'height') => Number(node.data[key] ?? 0) / 2;
  return {
    x1: Math.min(...nodes.map(n => n.position!.x - half(n, 'width'))),
    y1: Math.min(...nodes.map(n => n.position!.y - half(n, 'height'))),
    x2: Math.max(...nodes.map(n => n.position!.x + half(n, 'width'))),
    y2: Math.max(...nodes.map(n => n.position!.y + half(n, 'height')))
  };
}
