/**
 * The MIME renderer extension: every notebook output carrying a board snapshot
 * (application/vnd.d2.board+json) is drawn as the interactive board graph, from the
 * saved output alone, with no kernel.
 */
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';

import { MIME_TYPE, checkSnapshot } from './elements';
import { BoardView } from './view';

/** Ahead of HTML (rank 50) and Markdown, behind the live ipywidgets view (rank -10). */
export const RANK = 20;

/** A renderer of one board snapshot output: a board view of the output's data. */
export class BoardRenderer extends BoardView implements IRenderMime.IRenderer {
  constructor(options: IRenderMime.IRendererOptions) {
    super();
    this._mimeType = options.mimeType;
    this.addClass('d2-board-output');
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    try {
      this.setSnapshot(checkSnapshot(model.data[this._mimeType]));
    } catch (error) {
      this.showError(String((error as Error).message ?? error));
    }
  }

  private _mimeType: string;
}

export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true, // textContent only: nothing from a snapshot is parsed as HTML
  mimeTypes: [MIME_TYPE],
  createRenderer: options => new BoardRenderer(options)
};

const extension: IRenderMime.IExtension = {
  id: 'd2-notebook:board-renderer',
  description: 'Draws d2_notebook board snapshots as the interactive board graph.',
  rendererFactory,
  rank: RANK,
  dataType: 'json'
};

export default extension;
