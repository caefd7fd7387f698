/**
 * The board view: header, status filter, legend, the cytoscape graph, a hover line under
 * it and the details panel beside it. It draws one snapshot; `setSnapshot` replaces it. The notebook renderer
 * (mime.ts) and the document viewer (plugin.ts) are board views.
 */
import cytoscape from 'cytoscape';
import { Widget } from '@lumino/widgets';

import { Expanded, arrange } from './arrange';
import { detailsPanel, reportPanel } from './details';
import {
  FIRST_VIEW,
  IFilter,
  ISnapshot,
  MAX_ZOOM,
  MIN_ZOOM,
  VIEW_HEIGHT_PX,
  legend,
  statusesOf,
  stylesheet
} from './elements';

const HINT = 'Click a hypothesis or an evidence node to see its details; click a folded ' +
  '"▸ N evidence" node to unfold it. The wheel scrolls the page; click the graph to zoom ' +
  'it with the wheel.';
const HOVER_HINT = 'Point at a node or an edge to read it here.';

function div(className: string, text?: string): HTMLDivElement {
  const node = document.createElement('div');
  node.className = className;
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

/** A Lumino widget drawing one board snapshot. */
export class BoardView extends Widget {
  constructor() {
    super();
    this.addClass('d2-board');
    this.node.append(this._header, this._controls, this._legend, this._body);
    this._body.append(this._graphColumn, this._details);
    this._graphColumn.append(this._graph, this._hover);
    this._graph.style.height = `${VIEW_HEIGHT_PX}px`;
    this._graph.tabIndex = 0; // focusable: the wheel zooms the graph only while it has focus
    this._graph.addEventListener('focus', () => this._wheelZoom(true));
    this._graph.addEventListener('blur', () => this._wheelZoom(false));
    this._legend.append(...this._legendItems());
  }

  /** The cytoscape instance (for tests and the browser check), once drawn. */
  get cy(): cytoscape.Core | null {
    return this._cy;
  }

  /** Hypotheses whose evidence is folded into one node in the current view. */
  get folded(): string[] {
    return this._folded;
  }

  /** Draw `snapshot` (replacing what is shown; the selected node's panel stays open
   * when the new snapshot still has it). */
  setSnapshot(snapshot: ISnapshot): void {
    this._snapshot = snapshot;
    this._header.replaceChildren(
      Object.assign(document.createElement('b'), { textContent: snapshot.question }),
      document.createTextNode(` [${snapshot.state}]`),
      document.createElement('br'),
      Object.assign(document.createElement('span'), { textContent: snapshot.summary }));
    this._buildControls(snapshot);
    const selected = this._selected;
    if (selected && (snapshot.hypotheses[selected] || snapshot.evidence[selected])) {
      this._select(selected);
    } else {
      this._clearSelection();
    }
    this._draw();
  }

  /** Show an error in place of the graph. */
  showError(message: string): void {
    this._header.replaceChildren(div('d2-error', message));
  }

  protected onAfterAttach(): void {
    // Cytoscape caches where its canvas is on the page; the notebook scrolls inside its
    // own panel, so refresh that cache on any scroll (capture), once per frame.
    document.addEventListener('scroll', this._onScroll, true);
    this._resizeObserver.observe(this._graph); // shown later, or resized: re-measure
    if (this._cy) {
      this._cy.resize();
    } else if (this._snapshot) {
      this._draw();
    }
  }

  protected onBeforeDetach(): void {
    document.removeEventListener('scroll', this._onScroll, true);
    this._resizeObserver.disconnect();
  }

  protected onResize(): void {
    this._cy?.resize();
  }

  dispose(): void {
    this._cy?.destroy();
    this._cy = null;
    super.dispose();
  }

  private _draw(): void {
    if (!this._snapshot || !this.isAttached) {
      return; // drawn on attach: cytoscape measures its container
    }
    this._arrangedWidth = this._graph.clientWidth;
    const arranged = arrange(this._snapshot, this._filter, this._expanded,
      this._arrangedWidth || 800);
    this._graph.style.height = `${Math.max(arranged.heightPx, 120)}px`;
    const elements = arranged.elements;
    if (!this._cy) {
      this._cy = cytoscape({
        container: this._graph, elements: elements as any, style: stylesheet() as any,
        layout: { name: 'preset' }, minZoom: MIN_ZOOM, maxZoom: MAX_ZOOM,
        wheelSensitivity: 0.3, autoungrabify: false, boxSelectionEnabled: false,
        userZoomingEnabled: false
      });
      this._cy.on('tap', () => this._graph.focus({ preventScroll: true }));
      this._cy.on('tap', 'node', event => {
        const data = event.target.data();
        if (data.kind === 'fold') {
          this._expand(String(data.home));
        } else {
          this._select(event.target.id());
        }
      });
      this._cy.on('mouseover', 'node, edge', event => {
        event.target.addClass('hovered');
        this._hover.textContent = String(event.target.data('hover') ?? '');
      });
      this._cy.on('mouseout', 'node, edge', event => {
        event.target.removeClass('hovered');
        this._hover.textContent = HOVER_HINT;
      });
    } else {
      this._cy.batch(() => {
        this._cy!.elements().remove();
        this._cy!.add(elements as any);
      });
    }
    this._cy.resize();
    this._cy.viewport({ zoom: arranged.zoom, pan: arranged.pan });
    this._folded = arranged.folded;
    this._foldButton.textContent = this._expanded === 'all' ? 'fold evidence' : 'unfold all';
    this._foldButton.hidden = !arranged.folded.length && this._expanded !== 'all';
    if (this._selected && !elements.some(e => e.data.id === this._selected)) {
      this._clearSelection(); // filtered away or folded: its panel would be stale
    }
  }

  /** Unfold the evidence of one hypothesis. */
  private _expand(hypothesisId: string): void {
    if (this._expanded !== 'all') {
      this._expanded = new Set([...this._expanded, hypothesisId]);
    }
    this._draw();
  }

  private _wheelZoom(on: boolean): void {
    this._cy?.userZoomingEnabled(on);
    this._graph.classList.toggle('d2-graph-active', on);
  }

  private _clearSelection(): void {
    this._selected = null;
    this._details.replaceChildren(div('d2-hint', HINT));
  }

  private _select(id: string): void {
    this._selected = id;
    if (this._snapshot) {
      this._details.replaceChildren(detailsPanel(this._snapshot, id));
    }
  }

  private _buildControls(snapshot: ISnapshot): void {
    const boxes: HTMLElement[] = [Object.assign(document.createElement('b'),
      { textContent: 'show: ' })];
    for (const status of statusesOf(snapshot)) {
      boxes.push(this._checkbox(status, !this._filter.hiddenStatuses.has(status), on => {
        const hidden = new Set(this._filter.hiddenStatuses);
        if (on) {
          hidden.delete(status);
        } else {
          hidden.add(status);
        }
        this._filter = { ...this._filter, hiddenStatuses: hidden };
        this._draw();
      }));
    }
    boxes.push(this._checkbox('redundant evidence', this._filter.showRedundant, on => {
      this._filter = { ...this._filter, showRedundant: on };
      this._draw();
    }));
    boxes.push(this._checkbox('exploration edges', this._filter.showExploration === true,
      on => {
        this._filter = { ...this._filter, showExploration: on };
        this._draw();
      }));
    const fold = this._foldButton;
    fold.className = 'd2-button';
    fold.onclick = () => {
      this._expanded = this._expanded === 'all' ? new Set() : 'all';
      this._draw();
    };
    const report = document.createElement('button');
    report.textContent = 'report';
    report.className = 'd2-button';
    report.onclick = () => this._details.replaceChildren(reportPanel(snapshot));
    boxes.push(fold, report);
    this._controls.replaceChildren(...boxes);
  }

  private _checkbox(text: string, checked: boolean, change: (on: boolean) => void): HTMLElement {
    const label = document.createElement('label');
    label.className = 'd2-filter';
    const input = document.createElement('input');
    input.type = 'checkbox';
    input.checked = checked;
    input.dataset.d2Filter = text;
    input.onchange = () => change(input.checked);
    label.append(input, document.createTextNode(` ${text}`));
    return label;
  }

  private _legendItems(): HTMLElement[] {
    const { hypotheses, evidence } = legend();
    const swatch = ([fill, border, text]: string[]) => {
      const item = document.createElement('span');
      item.className = 'd2-swatch';
      item.style.background = fill;
      item.style.border = `1.5px solid ${border}`;
      item.textContent = text;
      return item;
    };
    return [div('d2-legend-title', 'hypotheses:'), ...hypotheses.map(swatch),
      div('d2-legend-title', 'evidence:'), ...evidence.map(swatch)];
  }

  private _onScroll = (): void => {
    if (this._cy && !this._scrollPending) {
      this._scrollPending = true;
      requestAnimationFrame(() => {
        this._scrollPending = false;
        this._cy?.resize();
      });
    }
  };

  /** A new width lays the graph out again (its columns, its folds); anything else only
   * refreshes cytoscape's offsets. */
  private _resizeObserver = new ResizeObserver(() => {
    if (this._cy && this._graph.clientWidth && this._graph.clientWidth !== this._arrangedWidth) {
      this._draw();
    } else {
      this._onScroll();
    }
  });
  private _arrangedWidth = 0;
  private _scrollPending = false;
  private _snapshot: ISnapshot | null = null;
  private _selected: string | null = null;
  private _filter: IFilter = { ...FIRST_VIEW, hiddenStatuses: new Set() };
  private _expanded: Expanded = new Set();
  private _folded: string[] = [];
  private _foldButton = document.createElement('button');
  private _cy: cytoscape.Core | null = null;
  private _header = div('d2-header');
  private _controls = div('d2-controls');
  private _legend = div('d2-legend');
  private _body = div('d2-body');
  private _graphColumn = div('d2-graph-column');
  private _graph = div('d2-graph');
  private _hover = div('d2-hover', HOVER_HINT);
  private _details = div('d2-details');
}
