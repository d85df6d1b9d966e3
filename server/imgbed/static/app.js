// The upload page: drag and drop, paste, a file picker, progress, a result
// card per file with copy buttons, and the recent uploads for admins.
"use strict";

const $ = (id) => document.getElementById(id);
const tokenInput = $("token");
tokenInput.value = localStorage.getItem("lsmgo-token") || "";

function token() { return tokenInput.value.trim(); }

function updateConfigLinks() {
  const q = token() ? "?key=" + encodeURIComponent(token()) : "";
  $("sharex").href = "/api/v1/sharex.sxcu" + q;
  $("picgo").href = "/api/v1/picgo.json" + q;
}

tokenInput.addEventListener("change", () => {
  localStorage.setItem("lsmgo-token", token());
  updateConfigLinks();
  loadGallery(1, true);
});

const linkFormats = [
  ["URL", "url"], ["Markdown", "markdown"], ["HTML", "html"], ["BBCode", "bbcode"],
  ["Markdown with link", "markdown_with_link"], ["Thumbnail", "thumbnail_url"], ["Delete link", "delete_url"],
];

// The host lets one client hold a few upload slots (4 by default) and
// answers 429 or 503 with Retry-After when a batch outruns its budget:
// files wait in a queue, a few are sent at once, and a refused one waits
// as long as the host asks and is sent again, holding its place.
const maxParallel = 4;
const maxAttempts = 12;
const queue = [];
let running = 0;

function upload(file) {
  const card = $("card").content.firstElementChild.cloneNode(true);
  card.querySelector(".name").textContent = file.name || "pasted image";
  card.querySelector("img").src = URL.createObjectURL(file);
  card.querySelector(".status").textContent = "Queued";
  $("results").prepend(card);
  queue.push({ file, card, attempt: 0 });
  pump();
}

function pump() {
  while (running < maxParallel && queue.length > 0) {
    running++;
    send(queue.shift());
  }
  if (running === 0) loadGallery(1, true);
}

function finish() {
  running--;
  pump();
}

// retryDelay reads Retry-After (seconds or an HTTP date) in milliseconds.
function retryDelay(xhr) {
  const h = xhr.getResponseHeader("Retry-After");
  let ms = 2000;
  if (h && !isNaN(Number(h))) ms = Number(h) * 1000;
  else if (h && !isNaN(Date.parse(h))) ms = Date.parse(h) - Date.now();
  return Math.min(60000, Math.max(250, ms));
}

function retry(job, delay) {
  job.attempt++;
  job.card.querySelector(".status").textContent = "Server busy, retrying in " + Math.ceil(delay / 1000) + " s";
  setTimeout(() => send(job), delay);
}

function send(job) {
  const { file, card } = job;
  const bar = card.querySelector("progress");
  const status = card.querySelector(".status");
  status.textContent = "";
  bar.value = 0;
  const form = new FormData();
  form.append("file", file, file.name || "pasted.png");
  const xhr = new XMLHttpRequest();
  xhr.open("POST", "/api/v1/upload");
  if (token()) xhr.setRequestHeader("Authorization", "Bearer " + token());
  xhr.upload.onprogress = (e) => { if (e.lengthComputable) bar.value = (100 * e.loaded) / e.total; };
  xhr.onerror = () => {
    if (job.attempt + 1 < maxAttempts) return retry(job, 2000);
    bar.remove();
    card.querySelector(".error").textContent = "Network error";
    finish();
  };
  xhr.onload = () => {
    if ((xhr.status === 429 || xhr.status === 503) && job.attempt + 1 < maxAttempts) return retry(job, retryDelay(xhr));
    bar.remove();
    let res;
    try { res = JSON.parse(xhr.responseText); } catch { res = { status: false, message: "HTTP " + xhr.status }; }
    if (res.status) showLinks(card, res.data);
    else card.querySelector(".error").textContent = res.message;
    finish();
  };
  xhr.send(form);
}

function showLinks(card, data) {
  card.querySelector(".name").textContent = data.origin_name + " · " + data.width + "×" + data.height +
    (data.duplicate ? " · already stored" : "");
  const dl = card.querySelector(".links");
  for (const [label, key] of linkFormats) {
    const value = data.links[key];
    if (!value) continue;
    const dt = document.createElement("dt");
    dt.textContent = label;
    const dd = document.createElement("dd");
    const input = document.createElement("input");
    input.readOnly = true;
    input.value = value;
    input.dataset.format = key;
    dd.append(input);
    const copy = document.createElement("button");
    copy.type = "button";
    copy.textContent = "Copy";
    copy.addEventListener("click", () => copyText(input, copy));
    dl.append(dt, dd, copy);
  }
}

async function copyText(input, button) {
  try {
    await navigator.clipboard.writeText(input.value);
  } catch {
    input.select();
    document.execCommand("copy");
  }
  button.textContent = "Copied";
  button.classList.add("done");
  setTimeout(() => { button.textContent = "Copy"; button.classList.remove("done"); }, 1500);
}

function uploadAll(files) {
  for (const f of files) if (f.type.startsWith("image/") || f.type === "") upload(f);
}

const drop = $("drop");
drop.addEventListener("click", (e) => { if (e.target !== $("picker")) $("picker").click(); });
drop.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") $("picker").click(); });
$("picker").addEventListener("change", (e) => { uploadAll(e.target.files); e.target.value = ""; });
drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
drop.addEventListener("dragleave", () => drop.classList.remove("over"));
drop.addEventListener("drop", (e) => {
  e.preventDefault();
  drop.classList.remove("over");
  uploadAll(e.dataTransfer.files);
});
document.addEventListener("paste", (e) => {
  const files = [];
  for (const item of e.clipboardData.items) if (item.kind === "file") files.push(item.getAsFile());
  uploadAll(files);
});

let galleryPage = 1;

async function loadGallery(page, reset) {
  if (!token()) { $("gallery").hidden = true; return; }
  const res = await fetch("/api/v1/images?page=" + page, { headers: { Authorization: "Bearer " + token() } });
  if (!res.ok) { $("gallery").hidden = true; return; }
  const body = await res.json();
  const grid = $("grid");
  if (reset) grid.replaceChildren();
  for (const img of body.data.data) {
    const a = document.createElement("a");
    a.href = img.links.url;
    a.target = "_blank";
    a.title = img.origin_name;
    const t = document.createElement("img");
    t.loading = "lazy";
    t.alt = img.origin_name;
    t.src = img.links.thumbnail_url;
    a.append(t);
    grid.append(a);
  }
  galleryPage = page;
  $("more").hidden = !body.data.has_more;
  $("gallery").hidden = false;
}

$("more").addEventListener("click", () => loadGallery(galleryPage + 1, false));
updateConfigLinks();
loadGallery(1, true);
