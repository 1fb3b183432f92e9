// A stand-alone page for the "Break it" section (breakit-demo.html), used
// until the lesson page mounts it and by tests/breakit-page.test.mjs. The
// cards' state is kept in the URL hash as "#brk.s=...", as on the lesson page.
import { loadAttention } from './attention.js';
import { mountBreakIt, setState } from './breakit.js';

const status = document.getElementById('boot-status');
const fromHash = () => new URLSearchParams(location.hash.slice(1)).get('brk.s');

try {
  const lab = await loadAttention();
  const section = mountBreakIt(document.getElementById('break-it'), lab, {
    onChange: (text) => history.replaceState(null, '', `#brk.s=${text}`),
  });
  const initial = fromHash();
  if (initial !== null && !setState(initial)) status.textContent = 'The state in this link was not valid, so it was ignored.';
  history.replaceState(null, '', `#brk.s=${section.getState()}`);
  window.addEventListener('hashchange', () => {
    const text = fromHash();
    if (text !== null) setState(text);
  });
  status.textContent = `Computed live by the attention core (${lab.simd ? 'WebAssembly SIMD' : 'WebAssembly, scalar'} build).`;
  document.documentElement.dataset.ready = 'true';
} catch (err) {
  status.textContent = `The attention core could not be loaded (${err.message}). Build it with "bash build.sh", then reload.`;
  throw err;
}
