package cdc.lakehouse;

import java.util.List;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.delta.catalog.DeltaTableV2;
import org.apache.spark.sql.delta.commands.DescribeDeltaHistoryCommand;

import scala.Option;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * {@code spark.sql.extensions} entry ({@code cdc.lakehouse.HistoryExtension}, after Delta's):
 * every session answers {@code describe history <table> limit <n>} with the rows of
 * {@link DeltaCommits}, read on the driver, instead of Delta's Spark job.
 *
 * <p>Why: the models read the newest commits of the tables they depend on at compile time
 * (macros/cdc_watermark.sql), four to six statements per build, 0.17-0.29 s each as Delta
 * runs them on a small machine. {@code lakehouse build} answers them in its dbt cursor already
 * (ingestion/lakehouse/delta_history.py); this answers them wherever else they are run: builds
 * through {@code lakehouse serve} (Spark's Thrift server), a plain {@code dbt build}, {@code
 * lakehouse sql}. The statement is parsed and resolved as Delta does it, so a missing table or
 * one that is not Delta's fails with Delta's own message; only the resolved command of a
 * statement with a limit is replaced, by a local relation of the same rows, and any failure to
 * read them leaves the command to Delta.
 */
public final class HistoryExtension extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    extensions.injectPostHocResolutionRule(new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
      @Override
      public Rule<LogicalPlan> apply(SparkSession session) {
        return new AnswerHistory();
      }
    });
    return BoxedUnit.UNIT;
  }

  /** The rule: Delta's resolved {@code describe history} command -> a relation of its rows. */
  static final class AnswerHistory extends Rule<LogicalPlan> {
    @Override
    public LogicalPlan apply(LogicalPlan plan) {
      if (!(plan instanceof DescribeDeltaHistoryCommand)) {
        return plan;
      }
      DescribeDeltaHistoryCommand command = (DescribeDeltaHistoryCommand) plan;
      Option<Object> limit = command.limit();
      DeltaTableV2 table = command.table();
      if (limit.isEmpty() || table.timeTravelOpt().isDefined()) {
        return plan;
      }
      try {
        List<InternalRow> rows =
            DeltaCommits.rows(table.deltaLog(), table.catalogTable(), (Integer) limit.get(), table.name());
        return new LocalRelation(
            command.output(), CollectionConverters.asScala(rows).toList(), false, Option.empty());
      } catch (Exception e) {
        return plan; // Delta's command runs, and says what is wrong
      }
    }
  }
}
