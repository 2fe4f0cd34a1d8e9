// Progressive enhancement only: every page works without this file.
// Copy buttons: <button data-copy="ID" hidden> copies the value of the element with that id.
for (const button of document.querySelectorAll('[data-copy]')) {
  button.hidden = false;
  button.addEventListener('click', async () => {
    const field = document.getElementById(button.dataset.copy);
    const label = button.textContent;
    try {
      await navigator.clipboard.writeText(field.value);
      button.textContent = 'Copied';
    } catch {
      field.select();
      button.textContent = 'Press Ctrl+C';
    }
    setTimeout(() => (button.textContent = label), 2000);
  });
}
