// Identity: entities and groups (list, create, delete; policies and members).

import { api, encodePath, listKeys } from "../api.js";
import { act, confirmDialog, field, h, input, outcome, pageTitle, section, table } from "../dom.js";

const split = (text) => text.split(",").map((s) => s.trim()).filter(Boolean);

export async function identityPage(parts, ctx) {
  const [entities, groups] = await Promise.all([listKeys("identity/entity/name"), listKeys("identity/group/name")]);
  const [entityRows, groupRows] = await Promise.all([
    Promise.all(entities.map((n) => api("GET", `identity/entity/name/${encodePath(n)}`).then((r) => r.data))),
    Promise.all(groups.map((n) => api("GET", `identity/group/name/${encodePath(n)}`).then((r) => r.data))),
  ]);
  const byId = Object.fromEntries(entityRows.map((e) => [e.id, e.name]));
  return h(
    "div",
    {},
    pageTitle("Identity"),
    kindSection(ctx, "Entities", "entity", entityRows, (e) => [
      h("code", {}, e.name), h("code", { class: "small-id" }, e.id), (e.policies || []).join(", "),
      e.disabled ? "disabled" : "enabled",
    ], ["Name", "Id", "Policies", "State"]),
    kindSection(ctx, "Groups", "group", groupRows, (g) => [
      h("code", {}, g.name), g.type || "internal", (g.policies || []).join(", "),
      (g.member_entity_ids || []).map((id) => byId[id] || id).join(", "),
    ], ["Name", "Type", "Policies", "Members"]),
  );
}

function kindSection(ctx, title, kind, items, row, headers) {
  const out = outcome();
  const rows = items.map((item) => {
    const del = h("button", { type: "button", class: "small danger", "aria-label": `Delete ${kind} ${item.name}` }, "Delete");
    del.addEventListener("click", async () => {
      if (!(await confirmDialog(`Delete the ${kind} ${item.name}?`, "Delete"))) return;
      await act(out, async () => {
        await api("DELETE", `identity/${kind}/name/${encodePath(item.name)}`);
        ctx.render();
      }, del);
    });
    return [...row(item), del];
  });
  const name = input({ id: `${kind}-name` });
  const policies = input({ id: `${kind}-policies` });
  const members = input({ id: `${kind}-members` });
  const submit = h("button", { type: "submit" }, `Create ${kind}`);
  const form = h(
    "form",
    {
      onsubmit: async (e) => {
        e.preventDefault();
        await act(out, async () => {
          if (!name.value.trim()) throw new Error("enter a name");
          const body = { name: name.value.trim(), policies: split(policies.value) };
          if (kind === "group") {
            body.member_entity_ids = await Promise.all(
              split(members.value).map(async (member) => {
                const found = await api("GET", `identity/entity/name/${encodePath(member)}`, { notFound: null });
                if (!found) throw new Error(`no entity named ${member}`);
                return found.data.id;
              }),
            );
          }
          await api("POST", `identity/${kind}`, { body });
          ctx.render();
        }, submit);
      },
    },
    h("h3", {}, `New ${kind}`),
    field("Name", name),
    field("Policies", policies, "Comma-separated."),
    kind === "group" ? field("Member entities", members, "Entity names, comma-separated.") : null,
    submit,
  );
  return section(
    title,
    rows.length ? table(title, [...headers, "Actions"], rows) : h("p", {}, "None yet."),
    out.el,
    form,
  );
}
