from tests.monit.real_peers import alertmanager_peer, prometheus_peer

__all__ = ["alertmanager_peer", "prometheus_peer"]
