// Task images decoded ahead of time: the worker page loads the next task's image while the current task is on
// screen, and the kind modules take the decoded element from here, so the next task shows from memory (no
// second request, which an HTTP cache might not answer either: a blocked network, or caching turned off).

const ready = new Map(); // image URL -> <img> loading or decoded, not on the page yet

// Start loading (and decoding) the image at `url`; resolves once it can be painted at once.
export function preload(url) {
  if (!ready.has(url)) {
    const img = document.createElement("img");
    img.decoding = "async";
    img.src = url;
    ready.set(url, img);
  }
  return ready.get(url).decode();
}

// The <img> of a task's image: the preloaded one if there is one (each is handed out once), else a new one.
export function taskImage(url) {
  const img = ready.get(url);
  if (img) {
    ready.delete(url);
    return img;
  }
  const fresh = document.createElement("img");
  fresh.src = url;
  return fresh;
}

// Drop a preloaded image that will not be shown (its task went back to the queue).
export function forgetImage(url) {
  ready.delete(url);
}
