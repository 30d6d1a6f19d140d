"""Client quotas (Kafka's ClientQuotaManager and QuotaFactory): ``client`` holds the
configured quotas and their managers (byte rates, request percentage); ``request`` is the
request quota's recording (Kafka's ClientRequestQuotaManager).  The sampled rate they
measure with is ``kafkapy.metrics.rate``."""
