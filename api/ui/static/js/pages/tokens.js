// Tokens: create, look up (by token or accessor, or your own), revoke.

import { api, session } from "../api.js";
import { act, confirmDialog, field, h, input, outcome, pageTitle, secretValue, section, table } from "../dom.js";
import { dataView } from "./secrets.js";

const split = (text) => text.split(",").map((s) => s.trim()).filter(Boolean);

function describe(data) {
  const show = (v) => (Array.isArray(v) ? v.join(", ") : v === null || v === undefined ? "" : typeof v === "object" ? JSON.stringify(v) : String(v));
  const rows = Object.keys(data)
    .filter((k) => k !== "id")
    .sort()
    .map((k) => [k, k === "accessor" ? secretValue(data[k], "accessor") : show(data[k])]);
  return table("Token properties", ["Property", "Value"], rows);
}

export async function tokensPage() {
  return h("div", {}, pageTitle("Tokens"), createSection(), lookupSection(), revokeSection(), unwrapSection());
}

function createSection() {
  const out = outcome();
  const policies = input({ id: "token-policies", placeholder: "default" });
  const ttl = input({ id: "token-ttl", placeholder: "1h" });
  const display = input({ id: "token-display" });
  const uses = input({ id: "token-uses", type: "number", min: "0", value: "0" });
  const renewable = h("input", { type: "checkbox", checked: true, id: "token-renewable" });
  const orphan = h("input", { type: "checkbox", id: "token-orphan" });
  const submit = h("button", { type: "submit" }, "Create token");
  return section(
    "Create a token",
    h(
      "form",
      {
        onsubmit: async (e) => {
          e.preventDefault();
          await act(out, async () => {
            const body = { renewable: renewable.checked, no_parent: orphan.checked, num_uses: Number(uses.value || 0) };
            if (policies.value.trim()) body.policies = split(policies.value);
            if (ttl.value.trim()) body.ttl = ttl.value.trim();
            if (display.value.trim()) body.display_name = display.value.trim();
            const reply = await api("POST", orphan.checked ? "auth/token/create-orphan" : "auth/token/create", { body });
            const auth = reply.auth || {};
            out.show(
              h("div", { class: "alert ok", role: "status" },
                h("p", {}, "Token created. Copy it now: it is not shown again."),
                h("p", {}, "Token: ", secretValue(auth.client_token, "new token")),
                h("p", {}, "Accessor: ", h("code", {}, auth.accessor || "")),
                h("p", {}, `Policies: ${(auth.policies || []).join(", ")}; TTL ${auth.lease_duration || 0} s`)),
            );
          }, submit);
        },
      },
      field("Policies", policies, "Comma-separated; empty gives your own policies."),
      field("TTL", ttl, "For example 30m, 12h; empty for the default."),
      field("Display name", display),
      field("Number of uses", uses, "0 is unlimited."),
      h("div", { class: "field check" }, h("label", { for: "token-renewable" }, renewable, " Renewable")),
      h("div", { class: "field check" }, h("label", { for: "token-orphan" }, orphan, " Orphan (no parent)")),
      submit,
      out.el,
    ),
  );
}

function lookupSection() {
  const out = outcome();
  const kind = h("select", { id: "lookup-kind" }, h("option", { value: "token" }, "Token"), h("option", { value: "accessor" }, "Accessor"));
  const value = input({ id: "lookup-value", type: "password" });
  const submit = h("button", { type: "submit" }, "Look up");
  const self = h("button", { type: "button", class: "secondary" }, "Look up my token");
  self.addEventListener("click", () =>
    act(out, async () => {
      const reply = await api("GET", "auth/token/lookup-self");
      out.show(describe(reply.data || {}));
    }, self),
  );
  return section(
    "Look up a token",
    h(
      "form",
      {
        onsubmit: async (e) => {
          e.preventDefault();
          await act(out, async () => {
            if (!value.value.trim()) throw new Error("enter a token or an accessor");
            const reply = kind.value === "token"
              ? await api("POST", "auth/token/lookup", { body: { token: value.value.trim() } })
              : await api("POST", "auth/token/lookup-accessor", { body: { accessor: value.value.trim() } });
            out.show(describe(reply.data || {}));
          }, submit);
        },
      },
      field("Look up by", kind),
      field("Token or accessor", value),
      h("div", { class: "actions" }, submit, self),
      out.el,
    ),
  );
}

function revokeSection() {
  const out = outcome();
  const kind = h("select", { id: "revoke-kind" }, h("option", { value: "token" }, "Token"), h("option", { value: "accessor" }, "Accessor"));
  const value = input({ id: "revoke-value", type: "password" });
  const submit = h("button", { type: "submit", class: "danger" }, "Revoke");
  return section(
    "Revoke a token",
    h(
      "form",
      {
        onsubmit: async (e) => {
          e.preventDefault();
          const v = value.value.trim();
          if (!v) return out.error(new Error("enter a token or an accessor"));
          if (!(await confirmDialog("Revoke this token and its children?", "Revoke"))) return;
          await act(out, async () => {
            if (kind.value === "token") await api("POST", "auth/token/revoke", { body: { token: v } });
            else await api("POST", "auth/token/revoke-accessor", { body: { accessor: v } });
            value.value = "";
            if (kind.value === "token" && v === session.token) {
              session.clear();
              location.hash = "#/login";
              return;
            }
            out.ok("Token revoked.");
          }, submit);
        },
      },
      field("Revoke by", kind),
      field("Token or accessor", value),
      submit,
      out.el,
    ),
  );
}

function unwrapSection() {
  const out = outcome();
  const value = input({ id: "unwrap-token", type: "password" });
  const submit = h("button", { type: "submit" }, "Unwrap");
  return section(
    "Unwrap",
    h(
      "form",
      {
        onsubmit: async (e) => {
          e.preventDefault();
          await act(out, async () => {
            const wrapping = value.value.trim();
            if (!wrapping) throw new Error("enter a wrapping token");
            // The wrapping token authenticates its own unwrap (it works only once).
            const reply = await api("POST", "sys/wrapping/unwrap", { token: wrapping, body: {} });
            value.value = "";
            const shown = [h("p", {}, "Unwrapped. The wrapping token is now used up.")];
            const data = reply && reply.data;
            // A wrapped KV v2 read holds {data, metadata}: show the secret's own data.
            const kv2 = data && data.metadata && typeof data.data === "object" && data.data !== null;
            if (data) shown.push(dataView(kv2 ? data.data : data));
            if (kv2) shown.push(h("p", {}, `KV v2 version ${data.metadata.version}.`));
            if (reply && reply.auth) shown.push(h("p", {}, "Token: ", secretValue(reply.auth.client_token, "unwrapped token")));
            out.show(h("div", { class: "card" }, shown));
          }, submit);
        },
      },
      field("Wrapping token", value),
      submit,
      out.el,
    ),
  );
}
