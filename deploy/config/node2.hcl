# Coffer node 2 of the compose cluster (deploy/compose.yaml mounts this file as
# /etc/coffer/coffer.hcl). Plain HTTP is for the private compose network only: in
# production set tls_cert_file/tls_key_file and use https:// addresses (docs/deploy.md).
listener "tcp" {
  address     = "0.0.0.0:8200"
  tls_disable = 1
}

storage "raft" {
  path    = "/var/lib/coffer/raft"
  node_id = "node2"

  # Every node lists all three; a node skips the block naming its own api_addr.
  retry_join {
    leader_api_addr = "http://node1:8200"
  }
  retry_join {
    leader_api_addr = "http://node2:8200"
  }
  retry_join {
    leader_api_addr = "http://node3:8200"
  }
}

api_addr     = "http://node2:8200"
cluster_addr = "node2:8201"
cluster_name = "coffer-compose"
log_level    = "info"
