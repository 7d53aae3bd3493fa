// A fold whose content waits in a <template class="rn-later"> (a notebook page's inlined
// modules: thousands of highlighted elements) gets it when it first opens, so the page
// loads, lays out and is checked with a small document. "toggle" does not bubble: it is
// caught on its way down, for pages that instant navigation brings in too.
document.addEventListener(
  "toggle",
  (event) => {
    const fold = event.target;
    if (!(fold instanceof HTMLDetailsElement) || !fold.open) return;
    for (const later of fold.querySelectorAll(":scope > template.rn-later")) {
      later.replaceWith(later.content);
    }
  },
  true,
);
