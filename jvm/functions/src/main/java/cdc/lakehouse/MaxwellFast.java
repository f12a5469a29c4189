package cdc.lakehouse;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * {@code cdc_lakehouse.json.parse_maxwell(value, key, topic, partition, offset)}: the common
 * maxwell-json (macros/formats/maxwell_json.sql) message read in one pass. Not written yet: every message goes to the SQL parser.
 */
final class MaxwellFast {
  private MaxwellFast() {}

  static InternalRow parse(UTF8String value, UTF8String key, UTF8String topic, int partition, long offset) {
    return null;
  }
}
