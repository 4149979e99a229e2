from tests.monit.real_peers import alertmanager_peer, prometheus_peer, prometheus_tls_peer

__all__ = ["alertmanager_peer", "prometheus_peer", "prometheus_tls_peer"]
