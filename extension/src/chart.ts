/**
 * An evidence's chart in the details panel: the Vega-Lite spec Python derived from the
 * stored rows (d2_notebook/charts), drawn by vega-embed bundled into the extension (no
 * CDN). A snapshot may come from an untrusted notebook, so the spec is drawn with a
 * loader that loads nothing (no data URLs, no images) and without the action menu; data
 * values are drawn as SVG text, and tooltips go through vega-tooltip, which escapes them.
 */
import embed from 'vega-embed';

/** A Vega loader that refuses every request: a snapshot's chart carries its data. */
const noLoads = {
  load: (uri: string): Promise<string> =>
    Promise.reject(new Error(`charts load nothing (asked for ${uri})`)),
  sanitize: (uri: string): Promise<{ href: string }> =>
    Promise.reject(new Error(`charts load nothing (asked for ${uri})`)),
  http: (uri: string): Promise<string> =>
    Promise.reject(new Error(`charts load nothing (asked for ${uri})`)),
  file: (uri: string): Promise<string> =>
    Promise.reject(new Error(`charts load nothing (asked for ${uri})`))
};

/** Draw `spec` into a new element (class d2-chart) and return it at once. */
export function chartElement(spec: object): HTMLElement {
  const holder = document.createElement('div');
  holder.className = 'd2-chart';
  embed(holder, spec as any, {
    actions: false,
    renderer: 'svg',
    loader: noLoads as any
  }).catch((error: unknown) => {
    const note = document.createElement('p');
    note.className = 'd2-note';
    note.textContent = `The chart could not be drawn: ${String(error)}`;
    holder.replaceChildren(note);
  });
  return holder;
}
