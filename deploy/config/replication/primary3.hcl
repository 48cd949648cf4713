# Node 3 of the primary site in deploy/compose.replication.yaml (mounted as
# /etc/coffer/coffer.hcl). Same settings as deploy/config/node3.hcl, with the
# site's own host names and cluster name; the replication listener's address is
# given at enable time, not here (docs/replication.md, "Compose").
listener "tcp" {
  address     = "0.0.0.0:8200"
  tls_disable = 1
}

storage "raft" {
  path    = "/var/lib/coffer/raft"
  node_id = "primary3"

  retry_join {
    leader_api_addr = "http://primary1:8200"
  }
  retry_join {
    leader_api_addr = "http://primary2:8200"
  }
  retry_join {
    leader_api_addr = "http://primary3:8200"
  }
}

api_addr     = "http://primary3:8200"
cluster_addr = "primary3:8201"
cluster_name = "coffer-primary"
log_level    = "info"
