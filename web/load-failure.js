// scorm/load-failure.js: a classic script that the pages dist.mjs writes
// (the SCORM launch page, dist/index.html) run before the lesson's module.
// When that module, or a module it imports, cannot be loaded, the page would
// say "Loading the attention core…" for ever: this says why instead. Opened
// from a disk (file://) a browser refuses module scripts, while a classic
// script like this one still runs. It is a file, not an inline script, so
// that the page keeps working under a strict Content-Security-Policy.
'use strict';

// A script element's error event does not bubble: it is caught on its way down.
window.addEventListener('error', (event) => {
  const script = event.target;
  if (!(script instanceof HTMLScriptElement) || script.type !== 'module') return;
  const status = document.getElementById('boot-status');
  if (!status) return;
  status.textContent = location.protocol === 'file:'
    ? 'This copy of the lesson cannot run from a file opened on a disk: it must be served over http or https, as an LMS or a web server does. '
      + 'attention-lab.html, the single-file copy of the lesson, is the one that opens from a disk.'
    : 'The lesson\'s scripts could not be loaded. Reload the page; if this message stays, the copy on the server is incomplete.';
  status.classList.add('core-error');
}, true);
