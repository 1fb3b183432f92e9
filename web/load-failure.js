// load-failure.js: a classic script that index.html runs before the lesson's
// module, and embed.html before the widget's (so do the pages dist.mjs
// writes from them: dist/index.html, dist/embed.html and the SCORM launch
// page).
// When that module, or a module it imports, cannot be loaded, the page would
// say "Loading the attention core…" for ever: this says why instead. Opened
// from a disk (file://) a browser refuses module scripts, while a classic
// script like this one still runs. It is a file, not an inline script, so
// that the page keeps working under a strict Content-Security-Policy.
'use strict';

// The repository's own pages mark their tag data-copy="repository": opened
// from a disk, it is served with `npm start`. dist.mjs writes the tag without
// the mark, and its copies point to the single file instead.
const fromRepository = document.currentScript?.dataset.copy === 'repository';

// A script element's error event does not bubble: it is caught on its way down.
window.addEventListener('error', (event) => {
  const script = event.target;
  if (!(script instanceof HTMLScriptElement) || script.type !== 'module') return;
  const status = document.getElementById('boot-status');
  if (!status) return;
  const fromDisk = 'This copy of the lesson cannot run from a file opened on a disk: it must be served over http or https';
  status.textContent = location.protocol !== 'file:'
    ? 'The lesson\'s scripts could not be loaded. Reload the page; if this message stays, the copy on the server is incomplete.'
    : fromRepository
      ? `${fromDisk}. In the attention-lab folder, run npm start and open the address it prints (http://127.0.0.1:8080/). `
        + 'npm run dist writes dist/attention-lab.html, a single-file copy that opens from a disk.'
      : `${fromDisk}, by a web server or by the LMS of a course. attention-lab.html, the single-file copy of the lesson, is the one that opens from a disk.`;
  status.classList.add('core-error');
}, true);
