/**
 * The side panel: what a click on a hypothesis or an evidence node shows, built from the
 * snapshot alone (no kernel). DOM nodes with textContent only; the one HTML a snapshot
 * carries (the report) is parsed into an inert document and copied element by element
 * through an allowlist, so the renderer is safe for untrusted notebooks.
 */
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
    panel.appendChild(element('p', `Verdict (${v.author}): ${v.headline ?? v.status}, confidence ` +
      `${percent(v.confidence)} — ${v.rationale} [${cited}]`, 'd2-verdict'));
    if (v.discounted?.length) {
      const set = element('ul', undefined, 'd2-discounted');
      for (const d of v.discounted) {
        set.appendChild(element('li', `discounted ${d.evidence_id} ` +
          `(${d.reason.replace(/_/g, ' ')}): ${d.explanation}`));
      }
      panel.appendChild(set);
    }
  } else if (hyp.status_reason) {
    panel.appendChild(element('p', `Reason: ${hyp.status_reason}`));
  }
  if (hyp.check) {
    panel.appendChild(element('p', `Re-check: ${hyp.check.text}`,
      `d2-check d2-check-${hyp.check.state === 'stale' ? 'stale' : 'confirmed'}`));
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
  if (item.reused_note) {
    panel.appendChild(element('p', item.reused_note.charAt(0).toUpperCase() +
      item.reused_note.slice(1), 'd2-reused'));
  }
  panel.appendChild(element('pre', item.sql_pretty ?? item.sql, 'd2-sql'));
  if (item.links.length) {
    const list = element('ul');
    for (const link of item.links) {
      list.appendChild(element('li', `${link.stance} ${link.hypothesis_id}` +
        (link.rationale ? `: ${link.rationale}` : '')));
    }
    panel.appendChild(list);
  }
  if (item.chart) {
    panel.appendChild(chartHolder(item.chart));
  }
  const scroll = element('div', undefined, 'd2-frame-scroll');
  scroll.appendChild(resultTable(item));
  panel.appendChild(scroll);
  if (item.rows_shown < item.stored_rows) {
    panel.appendChild(element('p', `First ${plural(item.rows_shown, 'row')} of ` +
      `${item.stored_rows} stored (the snapshot is capped; Board.evidence_frame('${id}') ` +
      'has them all).', 'd2-note'));
  }
  return panel;
}

/**
 * A placeholder the evidence's chart is drawn into. The chart code (vega-embed and
 * Vega) is a separate chunk, loaded on the first chart shown, so the panel itself stays
 * light.
 */
function chartHolder(spec: object): HTMLElement {
  const holder = element('div', undefined, 'd2-chart-holder');
  import('./chart')
    .then(module => holder.appendChild(module.chartElement(spec)))
    .catch((error: unknown) => {
      holder.appendChild(element('p', `The chart could not be drawn: ${String(error)}`,
        'd2-note'));
    });
  return holder;
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

/** Tags a report may use; any other element keeps only its text (script-like ones not even
 * that). */
const REPORT_TAGS = new Set(['h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'p', 'ul', 'ol', 'li', 'table',
  'thead', 'tbody', 'tr', 'th', 'td', 'strong', 'em', 'del', 'code', 'pre', 'blockquote', 'hr',
  'br', 'a']);
const DROPPED_TAGS = new Set(['script', 'style', 'template', 'noscript', 'iframe', 'object',
  'embed', 'svg', 'math', 'title', 'head']);
const LINK_TARGET = /^(https?|mailto):/i;
const ALIGNMENTS = new Set(['left', 'right', 'center']);

/**
 * Copy a parsed report into fresh DOM nodes: text, the tags of REPORT_TAGS and links to
 * http, https or mailto (opened in a new tab, no referrer). No attribute is copied except
 * a link's target, an ordered list's start and a table cell's alignment, so nothing can
 * load or run, whatever the source document holds.
 */
export function copyReport(source: Node, target: Node): void {
  for (const child of Array.from(source.childNodes)) {
    if (child.nodeType === Node.TEXT_NODE) {
      target.appendChild(document.createTextNode(child.textContent ?? ''));
      continue;
    }
    if (child.nodeType !== Node.ELEMENT_NODE) {
      continue;
    }
    const from = child as Element;
    const tag = from.tagName.toLowerCase();
    if (DROPPED_TAGS.has(tag)) {
      continue;
    }
    if (!REPORT_TAGS.has(tag)) {
      copyReport(from, target);
      continue;
    }
    const href = (from.getAttribute('href') ?? '').trim();
    if (tag === 'a' && !LINK_TARGET.test(href)) {
      copyReport(from, target);
      continue;
    }
    const to = document.createElement(tag);
    if (tag === 'a') {
      to.setAttribute('href', href);
      to.setAttribute('target', '_blank');
      to.setAttribute('rel', 'noopener noreferrer nofollow');
    }
    const start = from.getAttribute('start');
    if (tag === 'ol' && start && /^\d+$/.test(start)) {
      to.setAttribute('start', start);
    }
    const align = (from as HTMLElement).style?.textAlign;
    if ((tag === 'th' || tag === 'td') && align && ALIGNMENTS.has(align)) {
      to.style.textAlign = align;
    }
    copyReport(from, to);
    target.appendChild(to);
  }
}

/**
 * The report, rendered: the snapshot's ``report_html`` parsed by DOMParser (an inert
 * document: nothing in it loads or runs) and copied through copyReport. Older snapshots
 * without it show the Markdown as text.
 */
export function reportPanel(snapshot: ISnapshot): HTMLElement {
  const panel = element('div', undefined, 'd2-details-report');
  panel.appendChild(element('h4', 'Report'));
  if (snapshot.report_html) {
    const parsed = new DOMParser().parseFromString(snapshot.report_html, 'text/html');
    const body = element('div', undefined, 'd2-report-html');
    copyReport(parsed.body, body);
    panel.appendChild(body);
  } else {
    panel.appendChild(element('pre', snapshot.report ?? 'No report yet.', 'd2-report'));
  }
  return panel;
}
