// Auth methods and secrets engines: list, enable, tune, disable.

import { api, encodePath } from "../api.js";
import { act, confirmDialog, duration, field, h, input, outcome, pageTitle, section, table } from "../dom.js";

const KINDS = {
  engines: { title: "Secrets engines", base: "sys/mounts", types: ["kv", "kv-v2", "cubbyhole", "transit"] },
  auth: { title: "Auth methods", base: "sys/auth", types: ["userpass", "idp", "approle", "token"] },
};

export async function mountsPage(parts, ctx) {
  const [engines, auth] = await Promise.all([
    api("GET", "sys/mounts"),
    api("GET", "sys/auth"),
  ]);
  return h(
    "div",
    {},
    pageTitle("Auth methods & secrets engines"),
    kindSection(ctx, KINDS.engines, engines.data || {}),
    kindSection(ctx, KINDS.auth, auth.data || {}),
  );
}

function kindSection(ctx, kind, mounts) {
  const out = outcome();
  const editor = h("div");
  const rows = Object.entries(mounts)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([path, m]) => {
      const name = path.replace(/\/$/, "");
      const version = m.options && m.options.version ? ` v${m.options.version}` : "";
      const tune = h("button", { type: "button", class: "small secondary", "aria-label": `Tune ${path}` }, "Tune");
      tune.addEventListener("click", () => editor.replaceChildren(tuneForm(ctx, kind, name, m)));
      const buttons = [tune];
      const fixed = ["sys", "identity", "cubbyhole", "token"].includes(name);
      if (!fixed) {
        const disable = h("button", { type: "button", class: "small danger", "aria-label": `Disable ${path}` }, "Disable");
        disable.addEventListener("click", async () => {
          if (!(await confirmDialog(`Disable ${path}? Everything stored under it is deleted.`, "Disable"))) return;
          await act(out, async () => {
            await api("DELETE", `${kind.base}/${encodePath(name)}`);
            ctx.render();
          }, disable);
        });
        buttons.push(" ", disable);
      }
      return [h("code", {}, path), m.type + version, m.description || "", duration(m.config && m.config.default_lease_ttl), duration(m.config && m.config.max_lease_ttl), h("span", { class: "row-actions" }, buttons)];
    });
  return section(
    kind.title,
    table(kind.title, ["Path", "Type", "Description", "Default TTL", "Max TTL", "Actions"], rows),
    out.el,
    editor,
    enableForm(ctx, kind),
  );
}

function enableForm(ctx, kind) {
  const out = outcome();
  const prefix = kind.base.replace("/", "-");
  const type = input({ id: `${prefix}-type`, list: `${prefix}-types`, required: true });
  const types = h("datalist", { id: `${prefix}-types` }, kind.types.map((t) => h("option", { value: t })));
  const path = input({ id: `${prefix}-path`, placeholder: "same as the type" });
  const description = input({ id: `${prefix}-description` });
  const submit = h("button", { type: "submit" }, "Enable");
  return h(
    "details",
    {},
    h("summary", {}, `Enable a new ${kind === KINDS.auth ? "auth method" : "secrets engine"}`),
    h(
      "form",
      {
        onsubmit: async (e) => {
          e.preventDefault();
          await act(out, async () => {
            let t = type.value.trim();
            if (!t) throw new Error("enter a type");
            const body = { type: t, description: description.value };
            if (t === "kv-v2") {
              body.type = "kv";
              body.options = { version: "2" };
              t = "kv";
            }
            const target = path.value.trim().replace(/^\/+|\/+$/g, "") || t;
            await api("POST", `${kind.base}/${encodePath(target)}`, { body });
            ctx.render();
          }, submit);
        },
      },
      field("Type", type, kind === KINDS.engines ? "kv-v2 enables KV version 2." : null),
      types,
      field("Path", path),
      field("Description", description),
      submit,
      out.el,
    ),
  );
}

function tuneForm(ctx, kind, name, m) {
  const out = outcome();
  const cfg = m.config || {};
  const def = input({ id: "tune-default", value: cfg.default_lease_ttl ? String(cfg.default_lease_ttl) : "" , placeholder: "system default" });
  const max = input({ id: "tune-max", value: cfg.max_lease_ttl ? String(cfg.max_lease_ttl) : "", placeholder: "system default" });
  const description = input({ id: "tune-description", value: m.description || "" });
  const submit = h("button", { type: "submit" }, "Save settings");
  const cancel = h("button", { type: "button", class: "secondary" }, "Close");
  const form = h(
    "form",
    {
      class: "tune",
      onsubmit: async (e) => {
        e.preventDefault();
        await act(out, async () => {
          const body = { description: description.value };
          if (def.value.trim()) body.default_lease_ttl = def.value.trim();
          if (max.value.trim()) body.max_lease_ttl = max.value.trim();
          await api("POST", `${kind.base}/${encodePath(name)}/tune`, { body });
          ctx.render();
        }, submit);
      },
    },
    h("h3", {}, `Tune ${name}/`),
    field("Default lease TTL", def, "Seconds or a duration such as 1h."),
    field("Maximum lease TTL", max),
    field("Description", description),
    h("div", { class: "actions" }, submit, cancel),
    out.el,
  );
  cancel.addEventListener("click", () => form.remove());
  setTimeout(() => def.focus(), 0);
  return form;
}
