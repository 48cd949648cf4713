// The cluster: each node's role and health, the Raft peers, the leader and indexes.

import { api } from "../api.js";
import { errorBox, h, pageTitle, section, table } from "../dom.js";

const yes = (v) => (v ? "yes" : "no");

/** One optional call: its data, or the error (shown in words, the page goes on). */
async function optional(path) {
  try {
    const reply = await api("GET", path, { namespace: "" });
    return { data: (reply && reply.data) ?? reply };
  } catch (err) {
    return { error: err };
  }
}

export async function clusterPage(parts, ctx) {
  const [leader, ha, config, autopilot] = await Promise.all([
    optional("sys/leader"),
    optional("sys/ha-status"),
    optional("sys/storage/raft/configuration"),
    optional("sys/storage/raft/autopilot/state"),
  ]);
  const refresh = h("button", { type: "button", class: "secondary", onclick: () => ctx.render() }, "Refresh");
  const children = [pageTitle("Cluster"), h("p", {}, refresh)];
  const health = (autopilot.data && autopilot.data.servers) || {};

  if (ha.error) {
    if (ha.error.status !== 404) children.push(section("Nodes", errorBox(ha.error, "Cannot read sys/ha-status")));
  } else {
    const nodes = (ha.data && ha.data.nodes) || [];
    const rows = nodes.map((n) => [
      n.hostname || n.node_id || "",
      n.api_address || "",
      n.active_node ? "active (leader)" : "standby",
      n.last_echo || (n.active_node ? "—" : "never"),
      String(n.raft_applied_index ?? ""),
    ]);
    children.push(section("Nodes", table("Nodes", ["Node", "API address", "Role", "Last heartbeat", "Applied index"], rows)));
  }

  if (config.error) {
    children.push(section("Raft peers", errorBox(config.error, "Cannot read the Raft configuration")));
  } else {
    const c = config.data.config || {};
    const rows = (c.servers || []).map((s) => {
      const st = health[s.node_id] || {};
      const healthy = st.healthy === undefined ? "unknown" : st.healthy ? "healthy" : "unhealthy";
      return [
        s.node_id,
        s.address,
        s.leader ? "leader" : s.voter ? "follower (voter)" : "non-voter",
        healthy + (st.node_status ? `, ${st.node_status}` : ""),
        String(st.last_index ?? ""),
        st.last_contact || "",
      ];
    });
    children.push(
      section(
        "Raft peers",
        h("p", {}, `Committed index ${c.index ?? "unknown"}.`),
        table("Raft peers", ["Node id", "Raft address", "Role", "Health", "Applied index", "Last contact"], rows),
      ),
    );
  }
  if (leader.error) children.push(section("Leader", errorBox(leader.error, "Cannot read sys/leader")));
  else {
    const l = leader.data;
    const rows = [
      ["HA enabled", yes(l.ha_enabled)],
      ["This node is the leader", yes(l.is_self)],
      ["Leader address", l.leader_address || "none"],
      ["Leader cluster address", l.leader_cluster_address || "none"],
      ["Performance standby", yes(l.performance_standby)],
    ];
    if ("raft_committed_index" in l) rows.push(["Raft committed index", String(l.raft_committed_index)]);
    if ("raft_applied_index" in l) rows.push(["Raft applied index", String(l.raft_applied_index)]);
    if (l.active_time && !l.active_time.startsWith("0001")) rows.push(["Active since", l.active_time]);
    children.push(section("Leader", table("Leader", ["Property", "Value"], rows)));
  }

  if (autopilot.data) {
    const a = autopilot.data;
    children.push(
      section(
        "Autopilot",
        table("Autopilot", ["Property", "Value"], [
          ["Healthy", yes(a.healthy)],
          ["Failure tolerance", String(a.failure_tolerance)],
          ["Leader", a.leader || "none"],
          ["Voters", (a.voters || []).join(", ")],
        ]),
      ),
    );
  }
  return h("div", {}, children);
}
