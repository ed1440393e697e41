"""minikeyvalue maintenance: ``fleet mkv show|rebuild|rebalance ARRAY``."""
