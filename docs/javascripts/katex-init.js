// Typeset the math that pymdownx.arithmatex leaves in the page, with the
// site's own copy of KaTeX. Material's instant navigation swaps pages without a
// reload, so this runs on every page change (document$), not only on load.
document$.subscribe(({ body }) => {
  renderMathInElement(body, {
    delimiters: [
      { left: "$$", right: "$$", display: true },
      { left: "$", right: "$", display: false },
      { left: "\\(", right: "\\)", display: false },
      { left: "\\[", right: "\\]", display: true },
    ],
    throwOnError: true,
  });
});
