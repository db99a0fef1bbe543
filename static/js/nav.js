// The collapsing top navigation on small screens (issue 30, item 1), and the height of the
// run page's sticky contents, so a heading one of its links jumps to lands below it.
(() => {
  "use strict";

  const toggle = document.querySelector(".menu-toggle");
  const links = document.getElementById("nav-links");
  if (toggle && links) {
    // below 720 px the stylesheet folds the links only once this has run (no JS: shown)
    document.documentElement.classList.add("js-nav");
    const show = (open) => {
      links.classList.toggle("open", open);
      toggle.setAttribute("aria-expanded", String(open));
    };
    toggle.addEventListener("click", () => show(!links.classList.contains("open")));
    document.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && links.classList.contains("open")) {
        show(false);
        toggle.focus();
      }
    });
  }

  const toc = document.querySelector(".toc");
  if (toc && "ResizeObserver" in window) {
    const body = document.body;
    const measure = () => {
      const sticky = getComputedStyle(toc).position === "sticky";
      const gap = 8;
      body.style.setProperty("--sticky-top", sticky ? `${toc.offsetHeight + gap}px` : "0px");
    };
    new ResizeObserver(measure).observe(toc);
    window.addEventListener("resize", measure);
  }
})();
