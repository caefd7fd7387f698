// Remove build output: the TypeScript lib, the test build and the packaged extension.
const fs = require('fs');
const path = require('path');
for (const dir of ['lib', 'build-test', 'tsconfig.tsbuildinfo',
                   path.join('..', 'd2_notebook', 'labextension')]) {
  fs.rmSync(path.join(__dirname, '..', dir), { recursive: true, force: true });
}
