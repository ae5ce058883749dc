// callgate developer portal: copy buttons, files read into import forms, and a page answering a form replaces its address so that a
// reload does not send the form again. Every page works without this script.

function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
  // Plain-http fallback: a hidden textarea and the old copy command.
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.style.position = 'fixed';
  area.style.opacity = '0';
  document.body.appendChild(area);
  area.select();
  const copied = document.execCommand('copy');
  area.remove();
  return copied ? Promise.resolve() : Promise.reject(new Error('copy refused'));
}

document.addEventListener('DOMContentLoaded', () => {
  for (const button of document.querySelectorAll('button[data-copy]')) {
    const target = document.getElementById(button.dataset.copy);
    if (!target) continue;
    const label = button.textContent;
    button.hidden = false;
    button.addEventListener('click', () => {
      copyText(target.textContent.trim())
        .then(
          () => {
            button.textContent = 'Copied';
          },
          () => {
            button.textContent = 'Select and copy';
          },
        )
        .finally(() =>
          setTimeout(() => {
            button.textContent = label;
          }, 2000),
        );
    });
  }
  // A file chosen for an import is read into the form's text box, which is what the form sends (the portal
  // takes urlencoded forms only); without this script, the text is pasted there.
  for (const field of document.querySelectorAll('[data-file-field]')) {
    const input = field.querySelector('input[type="file"][data-fills]');
    const target = input && document.getElementById(input.dataset.fills);
    if (!target) continue;
    field.hidden = false;
    input.addEventListener('change', () => {
      const file = input.files?.[0];
      if (file)
        file.text().then((text) => {
          target.value = text;
        });
    });
  }
  const replaceUrl = document.body.dataset.replaceUrl;
  if (replaceUrl && window.history?.replaceState) window.history.replaceState(null, '', replaceUrl);
});
