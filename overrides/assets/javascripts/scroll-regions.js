// A box in the page that scrolls (a code block, a wide equation or table, a diagram,
// a notebook cell) can be reached and scrolled with the keyboard (WCAG 2.1.1): while
// its content overflows, it gets tabindex="0". Material does this for code blocks on
// devices with hover only, and takes it away elsewhere, so it is put back after it.
(() => {
  const MARK = "data-rn-scrolls";
  const SCROLLING = new Set(["auto", "scroll"]);

  function overflows(el) {
    const wide = el.scrollWidth > el.clientWidth + 1;
    const tall = el.scrollHeight > el.clientHeight + 1;
    if (!wide && !tall) return false;
    const style = getComputedStyle(el);
    return (wide && SCROLLING.has(style.overflowX)) || (tall && SCROLLING.has(style.overflowY));
  }

  function update() {
    const content = document.querySelector(".md-content");
    if (!content) return;
    for (const el of content.querySelectorAll("*")) {
      if (el.hasAttribute(MARK)) {
        if (!overflows(el)) {
          el.removeAttribute(MARK);
          el.removeAttribute("tabindex");
        }
      } else if (!el.hasAttribute("tabindex") && overflows(el)) {
        el.setAttribute(MARK, "");
        el.setAttribute("tabindex", "0");
      }
    }
  }

  let pending = false;
  function schedule() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      update();
    });
  }

  // Material removes a code block's tabindex on devices without hover: put it back.
  const restore = new MutationObserver((records) => {
    for (const { target } of records) {
      if (target.hasAttribute(MARK) && !target.hasAttribute("tabindex")) {
        target.setAttribute("tabindex", "0");
      }
    }
  });
  // Content changes size when fonts load or math is typeset.
  const resized = new ResizeObserver(schedule);

  document$.subscribe(() => {
    const inner = document.querySelector(".md-content");
    if (!inner) return;
    resized.disconnect();
    resized.observe(inner);
    restore.disconnect();
    restore.observe(inner, { subtree: true, attributes: true, attributeFilter: ["tabindex"] });
    update();
  });
  window.addEventListener("resize", schedule);
  document.addEventListener("change", schedule); // a content tab shows another panel
  document.addEventListener("toggle", schedule, true); // a <details> opens (no bubbling)
})();
