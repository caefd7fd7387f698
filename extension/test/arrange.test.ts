/**
 * The first view for the output's real width (src/arrange.ts): every node inside the
 * container at a readable zoom, evidence folded on a tall board, no holes under a filter.
 * Run: jlpm test.
 */
import { strict as assert } from 'node:assert';
import { test } from 'node:test';

import { arrange, boundingBox, foldId } from '../src/arrange';
import { FIRST_VIEW, ISnapshot, ISnapshotNode, readableZoom } from '../src/elements';

/** A board of `hypotheses` rows with `perHypothesis` evidence each, as Python lays it
 * out (2 rows of evidence growing to the right). */
function board(hypotheses: number, perHypothesis: number): ISnapshot {
  const nodes: ISnapshotNode[] = [];
  const edges: ISnapshot['graph']['edges'] = [];
  let evidence = 0;
  for (let h = 1; h <= hypotheses; h++) {
    const top = (h - 1) * 200;
    nodes.push({ id: `H${h}`, kind: 'hypothesis', label: `H${h}`, classes: 'hypothesis',
      position: { x: 135, y: top + 37 },
      data: { kind: 'hypothesis', status: h % 2 ? 'supported' : 'proposed', width: 270,
              height: 74 } });
    for (let slot = 0; slot < perHypothesis; slot++) {
      const id = `E${++evidence}`;
      nodes.push({ id, kind: 'evidence', label: id, classes: 'evidence',
        position: { x: 421 + Math.floor(slot / 2) * 222, y: top + 29 + (slot % 2) * 68 },
        data: { kind: 'evidence', stance: slot % 3 ? 'supports' : 'contradicts',
                home: `H${h}`, width: 210, height: 58 } });
      edges.push({ id: `${id}->H${h}`, source: id, target: `H${h}`,
        kind: slot % 3 ? 'supports' : 'contradicts', classes: '', data: {} });
    }
  }
  return { version: 1, question: 'q', state: 'done', summary: '', report: null,
    caps: { rows_per_evidence: 20, cell_chars: 200, total_cells: 20000 },
    graph: { nodes, edges }, hypotheses: {}, evidence: {} };
}

function insideAndReadable(snapshot: ISnapshot, width: number) {
  const view = arrange(snapshot, FIRST_VIEW, new Set(), width);
  const nodes = view.elements.filter(e => e.group === 'nodes');
  const box = boundingBox(nodes);
  assert.ok(view.zoom >= readableZoom() - 1e-9, `zoom ${view.zoom}`);
  assert.ok(view.pan.x + box.x1 * view.zoom >= 0);
  assert.ok(view.pan.x + box.x2 * view.zoom <= width + 1e-6, 'cut off on the right');
  assert.ok(view.pan.y + box.y2 * view.zoom <= view.heightPx + 1e-6, 'cut off below');
  return view;
}

test('a wide board wraps its evidence into the width instead of shrinking', () => {
  const view = insideAndReadable(board(4, 8), 1200); // 3 columns of evidence fit
  assert.deepEqual(view.folded, []);
  assert.equal(view.elements.filter(e => e.group === 'nodes').length, 4 + 32);
});

test('a tall board folds evidence under its hypothesis, with counts, and unfolds on ask', () => {
  const snapshot = board(50, 6);
  const view = insideAndReadable(snapshot, 640);
  assert.equal(view.folded.length, 50);
  const fold = view.elements.find(e => e.data.id === foldId('H1'))!;
  assert.equal(fold.data.label, '▸ 6 evidence\n4 supports · 2 contradicts');
  assert.equal(view.elements.filter(e => e.data.kind === 'evidence').length, 0);
  const opened = arrange(snapshot, FIRST_VIEW, new Set(['H1']), 640);
  assert.equal(opened.folded.length, 49);
  assert.equal(opened.elements.filter(e => e.data.home === 'H1' && e.data.kind === 'evidence')
    .length, 6);
  const all = arrange(snapshot, FIRST_VIEW, 'all', 640);
  assert.deepEqual(all.folded, []);
});

test('a status filter lays the rest out again: no holes', () => {
  const snapshot = board(6, 2);
  const view = arrange(snapshot, { ...FIRST_VIEW, hiddenStatuses: new Set(['supported']) },
    new Set(), 900);
  const tops = view.elements.filter(e => e.data.kind === 'hypothesis')
    .map(e => e.position!.y).sort((a, b) => a - b);
  assert.deepEqual(tops.map(y => y - tops[0]), [0, 104, 208]); // one row each, 30 apart
});

test('a narrow output takes one evidence column, still readable and inside', () => {
  const view = insideAndReadable(board(3, 4), 560);
  const xs = new Set(view.elements.filter(e => e.data.kind === 'evidence')
    .map(e => e.position!.x));
  assert.equal(xs.size, 1);
});

test('exploration edges are left out of the first view until asked for', () => {
  const snapshot = board(2, 1);
  snapshot.graph.edges.push({ id: 'E1~>H2', source: 'E1', target: 'H2', kind: 'motivates',
    classes: 'motivates', data: {} });
  const edgeIds = (showExploration: boolean) =>
    arrange(snapshot, { ...FIRST_VIEW, showExploration }, new Set(), 900).elements
      .filter(e => e.group === 'edges').map(e => e.data.id);
  assert.deepEqual(edgeIds(false), ['E1->H1', 'E2->H2']);
  assert.deepEqual(edgeIds(true), ['E1->H1', 'E2->H2', 'E1~>H2']);
});

test('an empty board lays out to nothing, without errors', () => {
  const empty = board(0, 0);
  const view = arrange(empty, FIRST_VIEW, new Set(), 800);
  assert.deepEqual(view.elements, []);
  assert.deepEqual(view.folded, []);
});
