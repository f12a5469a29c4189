package cdc.lakehouse;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * {@code cdc_lakehouse.json.parse_canal(value, key, topic, partition, offset)}: the common
 * canal-json (macros/formats/canal_json.sql) message read in one pass. Not written yet: every message goes to the SQL parser.
 */
final class CanalFast {
  private CanalFast() {}

  static InternalRow parse(UTF8String value, UTF8String key, UTF8String topic, int partition, long offset) {
    return null;
  }
}
