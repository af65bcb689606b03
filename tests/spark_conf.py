"""The Spark settings the suite's sessions share (no imports: spark_tables runs it without Django)."""

# Spark for the suite's tiny inputs: compiling (the JIT's optimising tier, Spark's generated code) costs
# far more CPU than it saves, and so do shuffle partitions and adaptive re-planning; the results are the same.
SMALL_SPARK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
SMALL_SPARK_CONF = {
    "spark.driver.extraJavaOptions": SMALL_SPARK_JVM,
    "spark.executor.extraJavaOptions": SMALL_SPARK_JVM,
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.sql.shuffle.partitions": "1",
    "spark.sql.adaptive.enabled": "false",
}
