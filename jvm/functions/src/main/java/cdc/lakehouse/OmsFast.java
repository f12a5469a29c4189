package cdc.lakehouse;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * {@code cdc_lakehouse.json.parse_oms(value, key, topic, partition, offset)}: the common
 * oms-json (macros/formats/oms_json.sql) message read in one pass. Not written yet: every message goes to the SQL parser.
 */
final class OmsFast {
  private OmsFast() {}

  static InternalRow parse(UTF8String value, UTF8String key, UTF8String topic, int partition, long offset) {
    return null;
  }
}
