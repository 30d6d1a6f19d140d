"""Client quotas (Kafka's ClientQuotaManager and QuotaFactory): ``client`` holds the
configured quotas and the byte-rate managers; ``rate`` is Kafka's sampled Rate."""
