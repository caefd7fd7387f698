/**
 * The side panel: what a click on a hypothesis or an evidence node shows, built from the
 * snapshot alone (no kernel). DOM nodes with textContent only: nothing in a snapshot is
 * ever parsed as HTML, so the renderer is safe for untrusted notebooks.
 */
import { chartElement } from './chart';
import { IEvidence, IHypothesis, ISnapshot } from './elements';

function element(tag: string, text?: string, className?: string): HTMLElement {
  const node = document.createElement(tag);
  if (text !== undefined) {
    node.textContent = text;
  }
  if (className) {
    node.className = className;
  }
  return node;
}

function percent(value: number | null): string {
  return value === null ? '' : `${Math.round(value * 100)}%`;
}

function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? '' : 's'}`;
}

/** The panel for a hypothesis: statement, status, verdict and rationale, its evidence. */
export function hypothesisPanel(id: string, hyp: IHypothesis): HTMLElement {
  const panel = element('div', undefined, 'd2-details-hypothesis');
  panel.appendChild(element('h4', `${id}: ${hyp.statement}`));
  const facts = [`Status: ${hyp.status}`];
  if (hyp.confidence !== null) {
    facts.push(`confidence ${percent(hyp.confidence)}`);
  }
  facts.push(`proposed by ${hyp.author} in round ${hyp.round}`);
  if (hyp.parent_id) {
    facts.push(`refines ${hyp.parent_id}`);
  }
  panel.appendChild(element('p', facts.join(' · ')));
  if (hyp.rationale) {
    panel.appendChild(element('p', `Why proposed: ${hyp.rationale}`));
  }
  if (hyp.verdict) {
    const v = hyp.verdict;
    const cited = v.evidence_ids.length ? v.evidence_ids.join(', ') : 'no evidence';
    panel.appendChild(element('p', `Verdict (${v.author}): ${v.status}, confidence ` +
      `${percent(v.confidence)} — ${v.rationale} [${cited}]`, 'd2-verdict'));
  } else if (hyp.status_reason) {
    panel.appendChild(element('p', `Reason: ${hyp.status_reason}`));
  }
  if (hyp.links.length) {
    panel.appendChild(element('p', 'Evidence:'));
    const list = element('ul');
    for (const link of hyp.links) {
      list.appendChild(element('li', `${link.evidence_id} ${link.stance}` +
        (link.rationale ? ` — ${link.rationale}` : '')));
    }
    panel.appendChild(list);
  } else {
    panel.appendChild(element('p', 'No evidence linked yet.'));
  }
  return panel;
}

/** The panel for an evidence: description, SQL, stances, and its stored rows as a table. */
export function evidencePanel(id: string, item: IEvidence): HTMLElement {
  const panel = element('div', undefined, 'd2-details-evidence');
  panel.appendChild(element('h4', `${id}: ${item.description}`));
  let rows = plural(item.row_count, 'row');
  if (item.truncated) {
    rows += ` (${item.stored_rows} stored on the board)`;
  }
  panel.appendChild(element('p', `${rows} · by ${item.author} (${item.author_role}) in ` +
    `round ${item.round}`));
  if (item.redundant) {
    panel.appendChild(element('p', `Marked redundant: ${item.redundant_reason ?? ''}`));
  }
  panel.appendChild(element('pre', item.sql, 'd2-sql'));
  if (item.links.length) {
    const list = element('ul');
    for (const link of item.links) {
      list.appendChild(element('li', `${link.stance} ${link.hypothesis_id}` +
        (link.rationale ? `: ${link.rationale}` : '')));
    }
    panel.appendChild(list);
  }
  if (item.chart) {
    panel.appendChild(chartElement(item.chart));
  }
  panel.appendChild(resultTable(item));
  if (item.rows_shown < item.stored_rows) {
    panel.appendChild(element('p', `First ${plural(item.rows_shown, 'row')} of ` +
      `${item.stored_rows} stored (the snapshot is capped; Board.evidence_frame('${id}') ` +
      'has them all).', 'd2-note'));
  }
  return panel;
}

/** The stored rows as an HTML table (class d2-frame, like the widget's). */
export function resultTable(item: IEvidence): HTMLElement {
  const table = element('table', undefined, 'd2-frame');
  const head = table.appendChild(element('thead')).appendChild(element('tr'));
  for (const column of item.columns) {
    head.appendChild(element('th', column));
  }
  const body = table.appendChild(element('tbody'));
  for (const row of item.rows) {
    const line = body.appendChild(element('tr'));
    for (const cell of row) {
      line.appendChild(element('td', cell === null ? '' : String(cell),
        typeof cell === 'number' ? 'd2-number' : undefined));
    }
  }
  return table;
}

/** The panel for any node id, or a short note when the snapshot has no such record. */
export function detailsPanel(snapshot: ISnapshot, id: string): HTMLElement {
  if (snapshot.hypotheses[id]) {
    return hypothesisPanel(id, snapshot.hypotheses[id]);
  }
  if (snapshot.evidence[id]) {
    return evidencePanel(id, snapshot.evidence[id]);
  }
  return element('p', `Nothing to show for ${id}.`);
}

/** The report, as preformatted Markdown text (the notebook shows it rendered). */
export function reportPanel(snapshot: ISnapshot): HTMLElement {
  const panel = element('div', undefined, 'd2-details-report');
  panel.appendChild(element('h4', 'Report'));
  panel.appendChild(element('pre', snapshot.report ?? 'No report yet.', 'd2-report'));
  return panel;
}
