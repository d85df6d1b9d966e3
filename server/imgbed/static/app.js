// The upload page: drag and drop, paste, a file picker, progress, a result
// card per file with copy buttons, and the recent uploads for admins.
"use strict";

const $ = (id) => document.getElementById(id);
const tokenInput = $("token");
tokenInput.value = localStorage.getItem("lsmgo-token") || "";

function token() { return tokenInput.value.trim(); }

// The page arrives rendered in its language (<html lang>); the strings
// are loaded again here for the messages the script writes and for
// switching language in place.
let strings = {};
let lang = document.documentElement.lang;
const stringsLoaded = fetch("/assets/i18n.json").then((r) => r.json()).then((s) => { strings = s; });

function tr(key, vars) {
  let s = (strings[lang] && strings[lang][key]) || (strings.en && strings.en[key]) || key;
  for (const k in vars || {}) s = s.replace("{" + k + "}", vars[k]);
  return s;
}

// label sets an element's text to a string and marks it, so a language
// switch translates it again.
function label(el, key) {
  el.dataset.i18n = key;
  el.textContent = tr(key);
  return el;
}

function translate() {
  document.documentElement.lang = lang;
  for (const el of document.querySelectorAll("[data-i18n]")) el.textContent = tr(el.dataset.i18n);
  for (const el of document.querySelectorAll("[data-i18n-placeholder]")) el.placeholder = tr(el.dataset.i18nPlaceholder);
}

$("lang").addEventListener("click", async () => {
  await stringsLoaded;
  lang = lang === "zh" ? "en" : "zh";
  document.cookie = "lsmgo-lang=" + lang + "; path=/; max-age=31536000; SameSite=Lax";
  translate();
});

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

const linkFormats = ["url", "markdown", "html", "bbcode", "markdown_with_link", "thumbnail_url", "delete_url"];

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
  if (file.name) card.querySelector(".name").textContent = file.name;
  else label(card.querySelector(".name"), "pasted");
  card.querySelector("img").src = URL.createObjectURL(file);
  label(card.querySelector(".status"), "queued");
  $("results").prepend(card);
  queue.push({ file, card, attempt: 0 });
  pump();
}

// uploadFromURL has the host fetch an image from its address; the card
// shows the stored image's thumbnail once it is in (the page's CSP loads
// nothing from elsewhere).
function uploadFromURL(address) {
  const card = $("card").content.firstElementChild.cloneNode(true);
  card.querySelector(".name").textContent = address;
  label(card.querySelector(".status"), "queued");
  $("results").prepend(card);
  queue.push({ address, card, attempt: 0 });
  pump();
}

$("byurl").addEventListener("submit", (e) => {
  e.preventDefault();
  const address = $("url").value.trim();
  if (address) uploadFromURL(address);
  $("url").value = "";
});

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
  const status = job.card.querySelector(".status");
  delete status.dataset.i18n;
  status.textContent = tr("retrying", { n: Math.ceil(delay / 1000) });
  setTimeout(() => send(job), delay);
}

function send(job) {
  const { file, card } = job;
  const bar = card.querySelector("progress");
  const status = card.querySelector(".status");
  delete status.dataset.i18n;
  status.textContent = "";
  bar.value = 0;
  const form = new FormData();
  if (job.address) form.append("url", job.address);
  else form.append("file", file, file.name || "pasted.png");
  const xhr = new XMLHttpRequest();
  xhr.open("POST", "/api/v1/upload");
  if (token()) xhr.setRequestHeader("Authorization", "Bearer " + token());
  xhr.upload.onprogress = (e) => { if (e.lengthComputable) bar.value = (100 * e.loaded) / e.total; };
  xhr.onerror = () => {
    if (job.attempt + 1 < maxAttempts) return retry(job, 2000);
    bar.remove();
    label(card.querySelector(".error"), "networkError");
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
  const name = card.querySelector(".name");
  delete name.dataset.i18n;
  name.textContent = data.origin_name + " · " + data.width + "×" + data.height;
  if (data.duplicate) {
    name.append(" · ");
    name.append(label(document.createElement("span"), "alreadyStored"));
  }
  const img = card.querySelector("img");
  if (!img.getAttribute("src")) img.src = data.links.thumbnail_url;
  const dl = card.querySelector(".links");
  for (const key of linkFormats) {
    const value = data.links[key];
    if (!value) continue;
    const dt = label(document.createElement("dt"), key);
    const dd = document.createElement("dd");
    const input = document.createElement("input");
    input.readOnly = true;
    input.value = value;
    input.dataset.format = key;
    dd.append(input);
    const copy = label(document.createElement("button"), "copy");
    copy.type = "button";
    copy.addEventListener("click", () => copyText(input, copy));
    dl.append(dt, dd, copy);
  }
  if (data.links.delete_url) offerDelete(card, data);
}

// offerDelete arms the card's delete button: the first click asks, the
// second deletes with the delete token of the upload's delete link.
function offerDelete(card, data) {
  const button = card.querySelector(".delete");
  button.hidden = false;
  let armed = false;
  button.addEventListener("click", async () => {
    if (!armed) {
      armed = true;
      label(button, "confirmDelete");
      return;
    }
    button.disabled = true;
    const deleteToken = new URL(data.links.delete_url).searchParams.get("token");
    const res = await fetch("/api/v1/images/" + encodeURIComponent(data.key), {
      method: "DELETE", headers: { "X-Delete-Token": deleteToken },
    });
    let body;
    try { body = await res.json(); } catch { body = { status: false, message: "HTTP " + res.status }; }
    if (!body.status) {
      card.querySelector(".error").textContent = body.message;
      button.disabled = false;
      return;
    }
    button.remove();
    card.querySelector(".links").remove();
    card.classList.add("deleted");
    label(card.querySelector(".status"), "deleted");
    loadGallery(1, true);
  });
}

async function copyText(input, button) {
  try {
    await navigator.clipboard.writeText(input.value);
  } catch {
    input.select();
    document.execCommand("copy");
  }
  label(button, "copied");
  button.classList.add("done");
  setTimeout(() => { label(button, "copy"); button.classList.remove("done"); }, 1500);
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
