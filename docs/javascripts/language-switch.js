// The language switch in the header leads to the same page in the other language.
// Every English page /P has its Chinese twin at /zh/P (the tests check that each twin
// exists), so the twin's address follows from the current one. Material's instant
// navigation swaps pages without re-rendering the header, so the links are set again
// after every page change, and they load the twin in full (target="_self"), which
// re-renders the header, search and labels in the other language.
(function () {
  "use strict";

  function siteRoot() {
    // Material renders the home page's address into the logo link: the site's root.
    var logo = document.querySelector("a.md-logo");
    var root = new URL(logo ? logo.getAttribute("href") : ".", location.href);
    var path = root.pathname.replace(/\/$/, "");
    // On a Chinese page the logo leads to the Chinese home: the site is one level up.
    if (document.documentElement.lang.indexOf("zh") === 0) path = path.replace(/\/zh$/, "");
    return path + "/";
  }

  function update() {
    var root = siteRoot();
    var path = location.pathname;
    if (path.indexOf(root) !== 0) return;
    var rest = path.slice(root.length); // "zh/experiments/warmup/" or "experiments/warmup/"
    if (rest === "zh" || rest.indexOf("zh/") === 0) rest = rest.slice(3);
    var targets = { en: root + rest, zh: root + "zh/" + rest };
    document.querySelectorAll("a.md-select__link[hreflang]").forEach(function (link) {
      var target = targets[link.getAttribute("hreflang")];
      if (!target) return;
      link.setAttribute("href", target + location.hash);
      link.setAttribute("target", "_self");
    });
  }

  if (typeof document$ !== "undefined") {
    document$.subscribe(update);
  } else {
    document.addEventListener("DOMContentLoaded", update);
  }
  window.addEventListener("hashchange", update);
})();
