/**
 * The document viewer: a board file (.d2board, the SQLite board) or a board JSON export
 * opens with "Open With → Board". The server extension (d2_notebook.notebook.server)
 * reads the file with the Python package and answers the same snapshot a notebook
 * output carries; this widget draws it. No kernel is started.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ABCWidgetFactory, DocumentRegistry, DocumentWidget } from '@jupyterlab/docregistry';
import { ServerConnection } from '@jupyterlab/services';

import { ISnapshot, checkSnapshot } from './elements';
import { BoardView } from './view';

export const FACTORY = 'Board';
export const FILE_TYPE = 'd2board';
const ENDPOINT = 'd2-notebook/snapshot';

/** Fetch the snapshot of the board file at `path` (relative to the server root). */
export async function fetchSnapshot(path: string): Promise<ISnapshot> {
  const settings = ServerConnection.makeSettings();
  const url = `${settings.baseUrl}${ENDPOINT}?path=${encodeURIComponent(path)}`;
  const response = await ServerConnection.makeRequest(url, {}, settings);
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    throw new Error(body.message ?? `${response.status} ${response.statusText}: ` +
      'is the d2_notebook server extension enabled? (jupyter server extension list)');
  }
  return checkSnapshot(body);
}

/** The content of a Board document: the board view of the file's snapshot. */
class BoardDocument extends BoardView {
  constructor(context: DocumentRegistry.Context) {
    super();
    this.addClass('d2-board-document');
    void context.ready.then(() => this._load(context.path));
    context.fileChanged.connect(() => void this._load(context.path));
  }

  private async _load(path: string): Promise<void> {
    try {
      this.setSnapshot(await fetchSnapshot(path));
    } catch (error) {
      this.showError(String((error as Error).message ?? error));
    }
  }
}

class BoardFactory extends ABCWidgetFactory<DocumentWidget<BoardDocument>> {
  protected createNewWidget(context: DocumentRegistry.Context): DocumentWidget<BoardDocument> {
    const content = new BoardDocument(context);
    const widget = new DocumentWidget({ content, context });
    widget.title.label = context.path.split('/').pop() ?? context.path;
    return widget;
  }
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'd2-notebook:board-viewer',
  description: 'Opens .d2board files and board JSON exports as the board graph.',
  autoStart: true,
  activate: (app: JupyterFrontEnd) => {
    app.docRegistry.addFileType({
      name: FILE_TYPE,
      displayName: 'd2 board',
      extensions: ['.d2board'],
      mimeTypes: ['application/vnd.d2.board+sqlite'],
      contentType: 'file',
      fileFormat: 'base64'
    });
    app.docRegistry.addWidgetFactory(new BoardFactory({
      name: FACTORY,
      label: 'Board',
      modelName: 'base64', // the content is not read here: the server reads the board
      fileTypes: [FILE_TYPE, 'json'],
      defaultFor: [FILE_TYPE],
      readOnly: true
    }));
  }
};

export default plugin;
