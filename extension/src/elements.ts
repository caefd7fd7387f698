/**
 * The board snapshot (application/vnd.d2.board+json) and its conversion to cytoscape
 * elements. Pure functions with no DOM and no cytoscape import, so node's test runner
 * checks them (test/elements.test.ts).
 *
 * Labels, colours and positions are computed once, in Python (d2_notebook/notebook/
 * graph.py and layout.py), and travel in the snapshot; the stylesheet and the view rules
 * come from look.json, the file the Python widget reads too.
 */
import look from './look.json';

/** The MIME type of a board snapshot. */
export const MIME_TYPE: string = look.mime_type;

/** The snapshot layout this renderer reads (d2_notebook/notebook/snapshot.py). */
export const SNAPSHOT_VERSION: number = look.snapshot_version;

export interface IPosition {
  x: number;
  y: number;
}

/** One graph node as Python drew it. */
export interface ISnapshotNode {
  id: string;
  kind: 'hypothesis' | 'evidence';
  label: string;
  classes: string;
  position: IPosition;
  data: { [key: string]: unknown };
}

/** One graph edge as Python drew it. */
export interface ISnapshotEdge {
  id: string;
  source: string;
  target: string;
  kind: 'supports' | 'contradicts' | 'weak' | 'neutral' | 'refines' | 'motivates';
  classes: string;
  data: { [key: string]: unknown };
}

export interface IVerdict {
  status: string;
  confidence: number;
  rationale: string;
  evidence_ids: string[];
  author: string;
  /** Evidence the judge set aside, with the reason (absent in older snapshots). */
  discounted?: { evidence_id: string; reason: string; explanation: string }[];
  /** "supported as a minor contributor (explains ~8% of the change, ...)" (absent in
   * older snapshots). */
  headline?: string;
}

export interface IHypothesis {
  statement: string;
  status: string;
  confidence: number | null;
  rationale: string;
  author: string;
  round: number;
  parent_id: string | null;
  status_reason: string | null;
  verdict: IVerdict | null;
  /** What the latest re-check said of the verdict (absent in older snapshots). */
  check?: ICheck | null;
  links: { evidence_id: string; stance: string; rationale: string }[];
}

/** A re-check's word on a verdict: stale (cited evidence changed or fails) or confirmed. */
export interface ICheck {
  state: 'stale' | 'confirmed';
  /** The day of the re-check (YYYY-MM-DD). */
  on: string;
  run_id: string;
  evidence_ids: string[];
  /** The sentence the details pane shows. */
  text: string;
}

export type Cell = string | number | boolean | null;

export interface IEvidence {
  description: string;
  sql: string;
  /** The SQL laid out by sqlglot's pretty printer (absent in older snapshots). */
  sql_pretty?: string;
  row_count: number;
  stored_rows: number;
  truncated: boolean;
  author: string;
  author_role: string;
  round: number;
  redundant: boolean;
  redundant_reason: string | null;
  /** The follow-ups that reused it, and how the details pane says so (null: none). */
  reused_by?: string[];
  reused_note?: string | null;
  columns: string[];
  rows: Cell[][];
  rows_shown: number;
  /** The Vega-Lite spec of the evidence's chart, when it has one within the caps. */
  chart?: object | null;
  links: { hypothesis_id: string; stance: string; rationale: string }[];
}

/** A whole board snapshot. */
export interface ISnapshot {
  version: number;
  question: string;
  state: string;
  summary: string;
  report: string | null;
  /** The report as HTML, rendered and made inert in Python (absent in older snapshots). */
  report_html?: string | null;
  /** Every model call came from an offline script: no language model (absent in older
   * snapshots). */
  scripted?: boolean;
  caps: { rows_per_evidence: number; cell_chars: number; total_cells: number };
  graph: { nodes: ISnapshotNode[]; edges: ISnapshotEdge[] };
  hypotheses: { [id: string]: IHypothesis };
  evidence: { [id: string]: IEvidence };
}

/** A cytoscape element definition (the subset this renderer makes). */
export interface IElement {
  group: 'nodes' | 'edges';
  data: { [key: string]: unknown; id: string };
  classes: string;
  position?: IPosition;
}

/** What the reader chose to see. */
export interface IFilter {
  /** Hypothesis statuses to hide (with the evidence that bears only on them). */
  hiddenStatuses: ReadonlySet<string>;
  /** Show evidence marked redundant (dimmed). */
  showRedundant: boolean;
  /** Show the "motivated by" edges (exploration that suggested a hypothesis); they cross
   * the graph, so the first view leaves them out. */
  showExploration?: boolean;
}

export const SHOW_ALL: IFilter = { hiddenStatuses: new Set(), showRedundant: true,
  showExploration: true };

/** What a reader sees first: every status, redundant evidence dimmed, no exploration
 * edges. */
export const FIRST_VIEW: IFilter = { hiddenStatuses: new Set(), showRedundant: true,
  showExploration: false };

/**
 * Check that `value` is a snapshot this renderer can draw.
 *
 * @throws Error naming what is wrong (and the fix) otherwise.
 */
export function checkSnapshot(value: unknown): ISnapshot {
  const snapshot = value as ISnapshot;
  if (typeof value !== 'object' || value === null || !snapshot.graph) {
    throw new Error('not a d2 board snapshot (no "graph"): display the board with ' +
      'd2_notebook.show(board), or open a .d2board file or a board JSON export');
  }
  if (snapshot.version > SNAPSHOT_VERSION) {
    throw new Error(`board snapshot version ${snapshot.version} is newer than this ` +
      `renderer (${SNAPSHOT_VERSION}): upgrade d2-notebook (pip install -U d2-notebook)`);
  }
  return snapshot;
}

/**
 * The nodes and edges to draw, under `filter`: the same rule as the widget's
 * filter_statuses (graph.py): hidden statuses take their hypotheses, every edge touching
 * them, and the evidence whose hypotheses are all hidden; evidence linked to nothing
 * stays.
 */
export function snapshotElements(snapshot: ISnapshot, filter: IFilter = SHOW_ALL): IElement[] {
  const gone = new Set<string>();
  for (const node of snapshot.graph.nodes) {
    if (node.kind === 'hypothesis' && filter.hiddenStatuses.has(String(node.data.status))) {
      gone.add(node.id);
    }
    if (node.kind === 'evidence' && !filter.showRedundant && node.data.redundant === true) {
      gone.add(node.id);
    }
  }
  const bearsOn = new Map<string, string[]>();
  for (const edge of snapshot.graph.edges) {
    if (edge.kind !== 'refines') {
      bearsOn.set(edge.source, [...(bearsOn.get(edge.source) ?? []), edge.target]);
    }
  }
  for (const [evidenceId, targets] of bearsOn) {
    if (targets.every(target => gone.has(target))) {
      gone.add(evidenceId);
    }
  }
  const elements: IElement[] = [];
  for (const node of snapshot.graph.nodes) {
    if (!gone.has(node.id)) {
      elements.push({
        group: 'nodes', classes: node.classes, position: { ...node.position },
        data: { ...node.data, id: node.id, label: node.label }
      });
    }
  }
  for (const edge of snapshot.graph.edges) {
    if (edge.kind === 'motivates' && filter.showExploration === false) {
      continue;
    }
    if (!gone.has(edge.source) && !gone.has(edge.target)) {
      elements.push({
        group: 'edges', classes: edge.classes,
        data: { ...edge.data, id: edge.id, source: edge.source, target: edge.target }
      });
    }
  }
  return elements;
}

/** The statuses present on the board, in look.json's order (the filter's checkboxes). */
export function statusesOf(snapshot: ISnapshot): string[] {
  const present = new Set(snapshot.graph.nodes
    .filter(node => node.kind === 'hypothesis').map(node => String(node.data.status)));
  return Object.keys(look.status_colors).filter(status => present.has(status));
}

/** The smallest zoom at which every label is at least view.min_label_px on screen. */
export function readableZoom(): number {
  return look.view.min_label_px / look.view.smallest_font_px;
}

/** A viewport: zoom and pan (cytoscape's model-to-screen transform). */
export interface IViewport {
  zoom: number;
  pan: IPosition;
}

/**
 * The first view of a graph whose bounding box is `box` in a container of `width` x
 * `height` pixels: the whole graph when it fits at a readable zoom, else its top-left
 * corner at that zoom (the reader pans and zooms for the rest). The widget applies the
 * same rule (widget.py, initial_view).
 */
export function initialViewport(
  box: { x1: number; y1: number; w: number; h: number }, width: number, height: number
): IViewport {
  const padding = look.view.padding;
  const readable = readableZoom();
  const fit = Math.min((width - 2 * padding) / Math.max(box.w, 1),
    (height - 2 * padding) / Math.max(box.h, 1), look.view.max_zoom);
  if (fit >= readable) {
    const zoom = Math.min(fit, 1.25);
    return {
      zoom,
      pan: { x: (width - box.w * zoom) / 2 - box.x1 * zoom,
             y: (height - box.h * zoom) / 2 - box.y1 * zoom }
    };
  }
  return { zoom: readable, pan: { x: padding - box.x1 * readable, y: padding - box.y1 * readable } };
}

/** The stylesheet (look.json), for cytoscape({style}). */
export function stylesheet(): { selector: string; style: { [key: string]: unknown } }[] {
  return JSON.parse(JSON.stringify(look.stylesheet));
}

/** Legend entries: [fill, border, text] for hypothesis statuses and evidence stances. */
export function legend(): { hypotheses: string[][]; evidence: string[][] } {
  const statusBorders = look.status_borders as { [key: string]: string };
  const hypotheses = Object.entries(look.status_colors)
    .map(([status, fill]) => [fill, statusBorders[status], status]);
  const names = look.legend as { [key: string]: string };
  const fills = look.evidence_colors as { [key: string]: string };
  const borders = look.evidence_borders as { [key: string]: string };
  const evidence = ['supports', 'contradicts', 'weak', 'neutral', 'context']
    .map(stance => [fills[stance], borders[stance], names[stance]]);
  return { hypotheses, evidence };
}

/** The view's height in pixels (look.json). */
export const VIEW_HEIGHT_PX: number = look.view.height_px;
export const MIN_ZOOM: number = look.view.min_zoom;
export const MAX_ZOOM: number = look.view.max_zoom;
