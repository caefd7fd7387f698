/**
 * snapshot → elements, on a snapshot written by the Python package (test/fixture.json,
 * made by tests/test_snapshot.py's writer; see the README of this folder), plus the
 * filter rule and the first-view rule. Run: jlpm test (node's built-in test runner).
 */
import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import {
  ISnapshot,
  MIME_TYPE,
  checkSnapshot,
  initialViewport,
  readableZoom,
  snapshotElements,
  statusesOf
} from '../src/elements';

const snapshot: ISnapshot = checkSnapshot(JSON.parse(
  readFileSync(join(__dirname, '..', '..', 'test', 'fixture.json'), 'utf-8')));

function ids(elements: { data: { id: string } }[]): string[] {
  return elements.map(element => element.data.id).sort();
}

test('every node and edge of the snapshot becomes an element, as Python drew it', () => {
  const elements = snapshotElements(snapshot);
  const nodes = elements.filter(e => e.group === 'nodes');
  const edges = elements.filter(e => e.group === 'edges');
  assert.deepEqual(ids(nodes), ['E1', 'E2', 'E3', 'E4', 'H1', 'H2', 'H3']);
  assert.deepEqual(ids(edges), ['E1->H1', 'E2->H1', 'E3->H3', 'E4~>H2', 'H1->H3']);
  const h1 = nodes.find(n => n.data.id === 'H1')!;
  const source = snapshot.graph.nodes.find(n => n.id === 'H1')!;
  assert.deepEqual(h1.position, source.position);
  assert.equal(h1.data.label, source.label);
  assert.equal(h1.classes, 'hypothesis supported stale'); // a re-check found E1 changed
  assert.ok(String(h1.data.label).includes('⚠ stale'));
  assert.equal(h1.data.color, source.data.color);
  const e2h1 = edges.find(e => e.data.id === 'E2->H1')!;
  assert.equal(e2h1.data.source, 'E2');
  assert.equal(e2h1.data.target, 'H1');
  assert.equal(e2h1.classes, 'contradicts');
  // Elements are copies: drawing never changes the snapshot.
  h1.position!.x += 1;
  assert.notEqual(h1.position!.x, source.position.x);
});

test('hiding a status hides its hypotheses, their edges and evidence bearing only on them', () => {
  const elements = snapshotElements(snapshot, {
    hiddenStatuses: new Set(['supported']), showRedundant: true });
  // H1 is supported: E1 and E2 bear only on H1 and go; H3 refines H1 and stays (proposed).
  assert.deepEqual(ids(elements.filter(e => e.group === 'nodes')), ['E3', 'E4', 'H2', 'H3']);
  assert.deepEqual(ids(elements.filter(e => e.group === 'edges')), ['E3->H3', 'E4~>H2']);
});

test('redundant evidence can be left out', () => {
  const elements = snapshotElements(snapshot, { hiddenStatuses: new Set(), showRedundant: false });
  assert.ok(!ids(elements).includes('E2'));
  assert.ok(!ids(elements).includes('E2->H1'));
  assert.ok(ids(elements).includes('E1'));
});

test('statuses present on the board, in the legend order', () => {
  assert.deepEqual(statusesOf(snapshot), ['proposed', 'supported', 'abandoned']);
});

test('the snapshot carries each evidence with its rows, capped', () => {
  const e1 = snapshot.evidence.E1;
  assert.deepEqual(e1.columns, ['drug', 'deaths']);
  assert.deepEqual(e1.rows[0], ['Pulmorex', 3]);
  assert.equal(e1.rows_shown, e1.rows.length);
  assert.equal(snapshot.hypotheses.H1.verdict!.status, 'supported');
  assert.equal(snapshot.hypotheses.H1.check!.state, 'stale');
  assert.ok(snapshot.hypotheses.H1.check!.text.startsWith('Stale since'));
  assert.equal(snapshot.hypotheses.H3.check, null);
});

test('the first view is readable: fit when it fits, else the top-left at a readable zoom', () => {
  const small = initialViewport({ x1: 0, y1: 0, w: 400, h: 200 }, 800, 600);
  assert.ok(small.zoom >= readableZoom());
  const tall = initialViewport({ x1: -10, y1: -20, w: 700, h: 4000 }, 800, 600);
  assert.equal(tall.zoom, readableZoom());
  assert.ok(tall.zoom * 12 >= 11);
  assert.deepEqual(tall.pan, { x: 24 + 10 * tall.zoom, y: 24 + 20 * tall.zoom });
});

test('bad input is refused with the fix named', () => {
  assert.throws(() => checkSnapshot({ nodes: [] }), /not a d2 board snapshot/);
  assert.throws(() => checkSnapshot({ ...snapshot, version: 99 }), /pip install -U d2-notebook/);
  assert.equal(MIME_TYPE, 'application/vnd.d2.board+json');
});
