"""cdc-lakehouse: land CDC messages from Kafka as bronze Delta tables for dbt to refine."""

__version__ = "0.1.0"
