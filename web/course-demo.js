// course-demo.html: what a course page adds for attention-lab iframes. The
// README ("Embed in your course") shows the resize half of this listener.
//  - attention-lab:resize: size the iframe that sent it to its content;
//  - attention-lab:result: show the outcome of an exercise. It comes the
//    first time the bug is switched on, and `passed` is false both for a
//    wrong prediction and for none at all, so the text names neither.
// Only messages from our own iframes are used, and only their numbers and
// plain text: nothing from a message is ever put in the page as HTML.
const frames = () => [...document.querySelectorAll('iframe.attention-lab')];
const results = document.getElementById('results');

window.addEventListener('message', (event) => {
  const frame = frames().find((f) => f.contentWindow === event.source);
  const data = event.data;
  if (!frame || !data || typeof data !== 'object') return;
  if (data.type === 'attention-lab:resize') {
    const height = Number(data.height);
    if (Number.isFinite(height) && height > 0 && height < 20000) frame.style.height = `${Math.ceil(height)}px`;
  } else if (data.type === 'attention-lab:result' && results) {
    const exercise = String(data.exercise).slice(0, 60);
    results.textContent = data.passed === true
      ? `Exercise “${exercise}”: prediction right ✓ (1 point)`
      : `Exercise “${exercise}”: no point ✗, no right prediction was made before the bug was switched on. The checks that failed show which ones catch it.`;
  }
});
