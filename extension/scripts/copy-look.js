// The look (styles and layout rules) lives once, in the Python package; the renderer
// imports a build-time copy of it (src/look.json is generated and gitignored).
const fs = require('fs');
const path = require('path');
const source = path.join(__dirname, '..', '..', 'd2_notebook', 'notebook', 'look.json');
fs.copyFileSync(source, path.join(__dirname, '..', 'src', 'look.json'));
