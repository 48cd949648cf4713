// Secrets: mounts, browsing, and KV v1/v2 read, create, edit, delete, versions, metadata.
//
// Routes: #/secrets                      the mounts
//         #/secrets/<mount>/<dir/>       a folder ("" is the mount's root)
//         #/secrets/<mount>/<path>       a secret (?version in the 4th part)
//         #/secrets/<mount>/<dir/>/new   create; #/secrets/<mount>/<path>/edit

import { api, encodePath, listKeys } from "../api.js";
import {
  act, confirmDialog, errorBox, field, h, input, okBox, outcome, pageTitle, secretValue, section, table,
} from "../dom.js";

const isKv = (m) => ["kv", "kv-v2", "generic", "cubbyhole"].includes(m.type);
const allStrings = (data) => Object.values(data).every((v) => typeof v === "string");
const kvVersion = (m) => (m.type === "kv-v2" || (m.options && String(m.options.version) === "2") ? 2 : 1);
const href = (...parts) => `#/secrets/${parts.map(encodeURIComponent).join("/")}`;

export async function secretsPage(parts, ctx) {
  const [mountName, path = "", mode = "", extra = ""] = parts;
  if (!mountName) return mountsList();
  const reply = await api("GET", `sys/internal/ui/mounts/${encodePath(mountName)}`);
  const mount = reply.data;
  const name = mount.path ? mount.path.replace(/\/$/, "") : mountName;
  if (!isKv(mount)) {
    return h("div", {}, pageTitle(name), errorBox(new Error(`this interface browses KV mounts only; "${name}" is a ${mount.type} mount`)));
  }
  const kv = { name, version: kvVersion(mount), ctx };
  if (mode === "new") return editor(kv, path, null);
  if (path === "" || path.endsWith("/")) return folder(kv, path);
  if (mode === "edit") return editor(kv, path, await readSecret(kv, path, ""));
  return secretView(kv, path, mode === "version" ? extra : "");
}

async function mountsList() {
  const reply = await api("GET", "sys/internal/ui/mounts");
  const mounts = (reply.data && reply.data.secret) || {};
  const rows = Object.entries(mounts)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([path, m]) => {
      const name = path.replace(/\/$/, "");
      const label = isKv(m) ? h("a", { href: href(name, "") }, path) : path;
      const type = isKv(m) ? `kv (version ${kvVersion(m)})` : m.type;
      return [label, type, m.description || ""];
    });
  return h(
    "div",
    {},
    pageTitle("Secrets"),
    h("p", {}, "Secrets engines you can use. Open a KV mount to browse its secrets."),
    rows.length ? table("Secrets engines", ["Path", "Type", "Description"], rows) : h("p", {}, "No secrets engines."),
  );
}

function crumbs(kv, path) {
  const items = [h("li", {}, h("a", { href: "#/secrets" }, "Secrets")), h("li", {}, h("a", { href: href(kv.name, "") }, kv.name))];
  const segments = path.split("/").filter(Boolean);
  let sofar = "";
  segments.forEach((seg, i) => {
    const last = i === segments.length - 1 && !path.endsWith("/");
    sofar += seg + (last ? "" : "/");
    items.push(h("li", {}, last ? h("span", { "aria-current": "page" }, seg) : h("a", { href: href(kv.name, sofar) }, seg)));
  });
  return h("nav", { "aria-label": "Breadcrumb", class: "crumbs" }, h("ol", {}, items));
}

async function folder(kv, path) {
  const listPath = kv.version === 2 ? `${kv.name}/metadata/${path}` : `${kv.name}/${path}`;
  const keys = await listKeys(encodePath(listPath));
  const rows = keys.map((key) => [
    h("a", { href: href(kv.name, path + key) }, key),
    key.endsWith("/") ? "folder" : "secret",
  ]);
  return h(
    "div",
    {},
    crumbs(kv, path),
    pageTitle(path ? `${kv.name}/${path}` : kv.name),
    h("p", { class: "actions" }, h("a", { class: "button", href: href(kv.name, path, "new") }, "Create secret")),
    rows.length ? table("Keys", ["Key", "Kind"], rows) : h("p", {}, "Nothing here yet."),
  );
}

async function readSecret(kv, path, version) {
  if (kv.version === 2) {
    const q = version ? `?version=${encodeURIComponent(version)}` : "";
    const reply = await api("GET", `${encodePath(`${kv.name}/data/${path}`)}${q}`, { notFound: null });
    if (!reply) return null;
    return { data: (reply.data && reply.data.data) || null, metadata: reply.data && reply.data.metadata };
  }
  const reply = await api("GET", encodePath(`${kv.name}/${path}`), { notFound: null });
  return reply ? { data: reply.data || {}, metadata: null } : null;
}

/** A secret's data: a key/value table of masked values, or (toggled) the JSON. */
export function dataView(data) {
  const entries = Object.entries(data || {});
  const kvTable = table(
    "Secret data",
    ["Key", "Value"],
    entries.map(([k, v]) => [h("code", {}, k), secretValue(v, k)]),
  );
  const json = h("div", { hidden: true }, secretValue(JSON.stringify(data, null, 2), "secret as JSON"));
  json.querySelector("code").classList.add("block");
  const toggle = h("button", { type: "button", class: "small secondary", "aria-pressed": "false" }, "JSON view");
  toggle.addEventListener("click", () => {
    const on = json.hidden;
    json.hidden = !on;
    kvTable.hidden = on;
    toggle.setAttribute("aria-pressed", String(on));
  });
  return h("div", {}, h("p", {}, toggle), kvTable, json);
}

async function secretView(kv, path, version) {
  const out = outcome();
  const secret = await readSecret(kv, path, version);
  const parent = path.includes("/") ? path.slice(0, path.lastIndexOf("/") + 1) : "";
  const heading = [crumbs(kv, path), pageTitle(path)];
  if (!secret) {
    return h("div", {}, heading, errorBox(new Error("no secret at this path (it may have been deleted)")));
  }
  const meta = secret.metadata;
  const del = h("button", { type: "button", class: "danger" }, kv.version === 2 ? "Delete latest version" : "Delete");
  del.addEventListener("click", async () => {
    if (!(await confirmDialog(`Delete ${path}?`, "Delete"))) return;
    await act(out, async () => {
      await api("DELETE", encodePath(kv.version === 2 ? `${kv.name}/data/${path}` : `${kv.name}/${path}`));
      if (kv.version === 2) kv.ctx.render();
      else kv.ctx.go("secrets", kv.name, parent);
    }, del);
  });
  const body = [];
  if (meta && (meta.deletion_time || meta.destroyed) && !secret.data) {
    body.push(h("p", { class: "alert warn", role: "status" }, `Version ${meta.version} is ${meta.destroyed ? "destroyed" : "deleted"}.`));
  } else {
    body.push(dataView(secret.data));
  }
  const actions = h(
    "p",
    { class: "actions" },
    h("a", { class: "button", href: href(kv.name, path, "edit") }, "Edit (new version)"),
    del,
  );
  const children = [
    heading,
    meta ? h("p", {}, `Version ${meta.version}, created ${meta.created_time}`) : null,
    section("Data", body, actions, out.el),
  ];
  children.push(wrapSection(kv, path, version));
  if (kv.version === 2) {
    const metadata = await api("GET", encodePath(`${kv.name}/metadata/${path}`), { notFound: null });
    if (metadata) children.push(versionsSection(kv, path, metadata.data), metadataSection(kv, path, metadata.data));
  }
  return h("div", {}, children);
}

function versionsSection(kv, path, meta) {
  const out = outcome();
  const op = (label, verb, method, danger) => (n) => {
    const button = h(
      "button",
      { type: "button", class: `small ${danger ? "danger" : "secondary"}`, "aria-label": `${label} version ${n}` },
      label,
    );
    button.addEventListener("click", async () => {
      if (danger && !(await confirmDialog(`Destroy version ${n} of ${path}? Its data is removed for good.`, "Destroy"))) return;
      await act(out, async () => {
        await api(method, encodePath(`${kv.name}/${verb}/${path}`), { body: { versions: [Number(n)] } });
        kv.ctx.render();
      }, button);
    });
    return button;
  };
  const remove = op("Delete", "delete", "POST");
  const undelete = op("Undelete", "undelete", "POST");
  const destroy = op("Destroy", "destroy", "PUT", true);
  const versions = Object.entries(meta.versions || {}).sort((a, b) => Number(b[0]) - Number(a[0]));
  const rows = versions.map(([n, v]) => {
    const state = v.destroyed ? "destroyed" : v.deletion_time ? "deleted" : "active";
    const buttons = [h("a", { href: href(kv.name, path, "version", n), "aria-label": `View version ${n}` }, "View")];
    if (state === "active") buttons.push(" ", remove(n));
    if (state === "deleted") buttons.push(" ", undelete(n));
    if (state !== "destroyed") buttons.push(" ", destroy(n));
    return [String(n) + (Number(n) === meta.current_version ? " (current)" : ""), v.created_time, state, h("span", { class: "row-actions" }, buttons)];
  });
  return section("Versions", table("Versions", ["Version", "Created", "State", "Actions"], rows), out.el);
}

function metadataSection(kv, path, meta) {
  const out = outcome();
  const maxVersions = input({ type: "number", min: "0", value: String(meta.max_versions || 0) });
  const cas = h("input", { type: "checkbox", checked: Boolean(meta.cas_required) });
  const deleteAfter = input({ value: meta.delete_version_after || "0s" });
  const custom = h("textarea", { rows: "4" });
  custom.value = JSON.stringify(meta.custom_metadata || {}, null, 2);
  const save = h("button", { type: "submit" }, "Save metadata");
  const destroyAll = h("button", { type: "button", class: "danger" }, "Delete all versions and metadata");
  destroyAll.addEventListener("click", async () => {
    if (!(await confirmDialog(`Permanently delete ${path}, every version and its metadata?`, "Delete everything"))) return;
    await act(out, async () => {
      await api("DELETE", encodePath(`${kv.name}/metadata/${path}`));
      const parent = path.includes("/") ? path.slice(0, path.lastIndexOf("/") + 1) : "";
      kv.ctx.go("secrets", kv.name, parent);
    }, destroyAll);
  });
  const form = h(
    "form",
    {
      onsubmit: async (e) => {
        e.preventDefault();
        await act(out, async () => {
          let customMetadata;
          try {
            customMetadata = JSON.parse(custom.value || "{}");
          } catch (err) {
            throw new Error(`custom metadata is not valid JSON: ${err.message}`);
          }
          await api("POST", encodePath(`${kv.name}/metadata/${path}`), {
            body: {
              max_versions: Number(maxVersions.value),
              cas_required: cas.checked,
              delete_version_after: deleteAfter.value.trim(),
              custom_metadata: customMetadata,
            },
          });
          out.ok("Metadata saved.");
        }, save);
      },
    },
    h("p", {}, `Current version ${meta.current_version}, oldest ${meta.oldest_version}, updated ${meta.updated_time}.`),
    field("Maximum versions", maxVersions, "0 keeps the mount's setting."),
    h("div", { class: "field check" }, h("label", {}, cas, " Require check-and-set on every write")),
    field("Delete versions after", deleteAfter, "A duration such as 30d or 0s (never)."),
    field("Custom metadata (JSON object of strings)", custom),
    h("div", { class: "actions" }, save, destroyAll),
    out.el,
  );
  return section("Metadata", form);
}

/** Key/value rows and a JSON text view of the same data; either can be edited. */
function dataEditor(initial) {
  const rows = h("div", { class: "kv-rows" });
  const addRow = (k = "", v = "") => {
    const key = input({ value: k, "aria-label": "Key", placeholder: "key" });
    const value = input({ type: "password", value: typeof v === "string" ? v : JSON.stringify(v), "aria-label": "Value", placeholder: "value" });
    const show = h("button", { type: "button", class: "small secondary", "aria-pressed": "false", "aria-label": "Show value" }, "Show");
    show.addEventListener("click", () => {
      const on = value.type === "password";
      value.type = on ? "text" : "password";
      show.setAttribute("aria-pressed", String(on));
      show.textContent = on ? "Hide" : "Show";
    });
    const remove = h("button", { type: "button", class: "small secondary", "aria-label": "Remove row" }, "Remove");
    const row = h("div", { class: "kv-row" }, key, value, show, remove);
    remove.addEventListener("click", () => row.remove());
    rows.append(row);
    return key;
  };
  const entries = Object.entries(initial || {});
  if (!entries.length) addRow();
  entries.forEach(([k, v]) => addRow(k, v));
  const json = h("textarea", { rows: "10", id: "secret-json", spellcheck: "false", class: "mono" });
  const jsonField = field("Secret data as JSON", json);
  jsonField.hidden = true;
  const add = h("button", { type: "button", class: "small secondary" }, "Add row");
  add.addEventListener("click", () => addRow().focus());
  const kvPart = h("div", {}, rows, add);

  const fromRows = () => {
    const data = {};
    for (const row of rows.querySelectorAll(".kv-row")) {
      const [k, v] = row.querySelectorAll("input");
      if (!k.value && !v.value) continue;
      if (!k.value) throw new Error("every value needs a key");
      data[k.value] = v.value;
    }
    return data;
  };
  const fromJson = () => {
    let data;
    try {
      data = JSON.parse(json.value || "{}");
    } catch (err) {
      throw new Error(`the JSON is not valid: ${err.message}`);
    }
    if (!data || typeof data !== "object" || Array.isArray(data)) throw new Error("the JSON must be an object");
    return data;
  };
  const mode = h("button", { type: "button", class: "small secondary", "aria-pressed": "false" }, "JSON view");
  const modeError = h("div");
  mode.addEventListener("click", () => {
    modeError.replaceChildren();
    try {
      if (jsonField.hidden) {
        json.value = JSON.stringify(fromRows(), null, 2);
      } else {
        const data = fromJson();
        if (!allStrings(data)) {
          throw new Error("values that are not text (numbers, lists, objects) can only be edited in the JSON view");
        }
        rows.replaceChildren();
        const list = Object.entries(data);
        if (!list.length) addRow();
        list.forEach(([k, v]) => addRow(k, v));
      }
    } catch (err) {
      modeError.replaceChildren(errorBox(err));
      return;
    }
    jsonField.hidden = !jsonField.hidden;
    kvPart.hidden = !jsonField.hidden;
    mode.setAttribute("aria-pressed", String(!jsonField.hidden));
  });
  if (!allStrings(initial || {})) {
    // Rows hold text: a number or list would come back as a string, so start in JSON.
    json.value = JSON.stringify(initial, null, 2);
    jsonField.hidden = false;
    kvPart.hidden = true;
    mode.setAttribute("aria-pressed", "true");
  }
  return {
    el: h("fieldset", {}, h("legend", {}, "Data"), h("p", {}, mode), modeError, kvPart, jsonField),
    value: () => (jsonField.hidden ? fromRows() : fromJson()),
  };
}

function editor(kv, path, existing) {
  const out = outcome();
  const creating = existing === null;
  const pathInput = input({ id: "secret-path", value: creating ? path : path, readonly: !creating });
  const data = dataEditor(existing && existing.data);
  const cas = kv.version === 2 && existing && existing.metadata ? existing.metadata.version : null;
  const save = h("button", { type: "submit" }, "Save");
  const form = h(
    "form",
    {
      class: "card",
      onsubmit: async (e) => {
        e.preventDefault();
        await act(out, async () => {
          const target = pathInput.value.trim().replace(/^\/+/, "");
          if (!target || target.endsWith("/")) throw new Error("enter a path that does not end with /");
          const value = data.value();
          if (kv.version === 2) {
            const body = { data: value };
            if (cas !== null && cas !== undefined) body.options = { cas };
            await api("POST", encodePath(`${kv.name}/data/${target}`), { body });
          } else {
            await api("PUT", encodePath(`${kv.name}/${target}`), { body: value });
          }
          kv.ctx.go("secrets", kv.name, target);
        }, save);
      },
    },
    field("Path", pathInput, creating ? `Below ${kv.name}/; use / to make folders.` : null),
    data.el,
    h("div", { class: "actions" }, save, h("a", { class: "button secondary", href: href(kv.name, creating ? path : path) }, "Cancel")),
    out.el,
  );
  return h("div", {}, crumbs(kv, path), pageTitle(creating ? "Create secret" : `Edit ${path}`), form);
}

/** Response-wrap the secret: a single-use token to hand over instead of the values. */
function wrapSection(kv, path, version) {
  const out = outcome();
  const ttl = input({ id: "wrap-ttl", value: "5m" });
  const submit = h("button", { type: "submit", class: "secondary" }, "Wrap");
  const form = h(
    "form",
    {
      onsubmit: async (e) => {
        e.preventDefault();
        await act(out, async () => {
          if (!ttl.value.trim()) throw new Error("enter a TTL such as 5m");
          const q = kv.version === 2 && version ? `?version=${encodeURIComponent(version)}` : "";
          const target = kv.version === 2 ? `${kv.name}/data/${path}` : `${kv.name}/${path}`;
          const reply = await api("GET", `${encodePath(target)}${q}`, { wrapTTL: ttl.value.trim() });
          const info = reply.wrap_info || {};
          if (!info.token) throw new Error("the server answered without a wrapping token");
          out.show(
            h("div", { class: "alert ok", role: "status" },
              h("p", {}, "Wrapping token (single use): ", secretValue(info.token, "wrapping token")),
              h("p", {}, `Expires in ${info.ttl} s; unwrap it on the Tokens page or with sys/wrapping/unwrap.`)),
          );
        }, submit);
      },
    },
    h("p", {}, "Hand over a single-use wrapping token instead of the values."),
    field("Wrapping TTL", ttl),
    submit,
    out.el,
  );
  return section("Wrap", form);
}
