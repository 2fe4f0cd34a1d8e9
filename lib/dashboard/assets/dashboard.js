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

// Routing: the count of models the form's settings would leave usable, updated as it changes (the
// server asks again before saving settings that leave none). Prices are nano-USD per token.
for (const form of document.querySelectorAll('form[data-routing]')) {
  const out = form.querySelector('[data-usable-count]');
  if (!out) continue;
  const cap = (name) => {
    const text = form.elements[name].value.trim().replace(/^\$/, '');
    return text === '' || !Number.isFinite(Number(text)) ? Infinity : Number(text) * 1000;
  };
  const update = () => {
    const rows = [...form.querySelectorAll('tr[data-prices]')];
    const capIn = cap('price_cap_input'), capOut = cap('price_cap_output');
    const usable = rows.filter((row) => row.querySelector('input[name=allow]').checked
      && JSON.parse(row.dataset.prices).some(([i, o]) => i <= capIn && o <= capOut)).length;
    out.textContent = usable === 0
      ? `0 of ${rows.length} models would be usable: every request of every key would be refused.`
      : `${usable} of ${rows.length} ${rows.length === 1 ? 'model' : 'models'} would be usable once saved.`;
    out.classList.toggle('error-text', usable === 0);
  };
  form.addEventListener('input', update);
  form.addEventListener('change', update);
}

// Dates are shown in UTC; each <time data-local> also offers the browser's local time, on hover and
// for screen readers (title), without changing the UTC figure the rest of the page uses.
const localFormat = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', timeZoneName: 'short' });
for (const el of document.querySelectorAll('time[data-local]')) {
  el.title = `Your time: ${localFormat.format(new Date(el.dateTime))}`;
}
