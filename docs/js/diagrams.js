// Schema diagrams (diagrams/*.svg) are shown at their own size in a box that scrolls both
// ways; the widest are over 5,000 pt. Each opens scrolled to its top-level node (the root
// type's seq table): the docs build writes where it is as data-focus-x and data-focus-y,
// fractions of the picture (tools/mkdocs_hooks.py).
function focusDiagrams() {
  document.querySelectorAll("img[data-focus-x]").forEach((img) => {
    const box = img.closest("p");
    if (!box) return;
    const place = () => {
      box.scrollLeft = Math.max(0, img.clientWidth * parseFloat(img.dataset.focusX) - 48);
      box.scrollTop = Math.max(0, img.clientHeight * parseFloat(img.dataset.focusY) - 48);
    };
    if (img.complete && img.naturalWidth) place();
    else img.addEventListener("load", place, { once: true });
  });
}
if (typeof document$ !== "undefined") document$.subscribe(focusDiagrams);  // instant loading
else document.addEventListener("DOMContentLoaded", focusDiagrams);
