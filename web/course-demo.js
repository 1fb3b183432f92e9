// course-demo.html: what a course page adds for attention-lab iframes. The
// same listener is in the README ("Embed in your course").
//  - attention-lab:resize: size the iframe that sent it to its content;
//  - attention-lab:result: show the outcome of an exercise.
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
      ? `Exercise “${exercise}”: prediction right ✓`
      : `Exercise “${exercise}”: prediction wrong, look at which checks failed ✗`;
  }
});
