-- parquet_stats.sql — `ramtrace stats`' per-head counts and shares (events,
-- writes, reads, distinct, used_share, entropy_bits, hot1_share,
-- warm_reads, cold_reads) computed from a Parquet dataset written by
-- `ramtrace export TRACE.db... --format parquet -o DATASET`.  Runs as is in
-- DuckDB after replacing DATASET with the dataset directory; Spark SQL and
-- Polars run the same statement once the two read_parquet(...) calls are
-- replaced by views `events` (DATASET/events, partitions run and layer)
-- and `runs` (DATASET/runs) (docs/analysis.md, "Traces as a Parquet dataset").
WITH ev AS (
    SELECT run, layer, head, pos, op, slot
    FROM read_parquet('DATASET/events/*/*/*.parquet', hive_partitioning = true)
), run_slots AS (
    SELECT run, n_slots FROM read_parquet('DATASET/runs/runs.parquet')
), per_slot AS (  -- accesses of each slot, and the first position that wrote it
    SELECT run, layer, head, slot, count(*) AS n,
           min(CASE WHEN op = 0 THEN pos END) AS first_write
    FROM ev GROUP BY run, layer, head, slot
), ranked AS (
    SELECT per_slot.*, row_number() OVER (PARTITION BY run, layer, head ORDER BY n DESC) AS r
    FROM per_slot
), slots AS (
    SELECT ranked.run, layer, head, count(*) AS distinct_slots, sum(n) AS events,
           log2(sum(n)) - sum(n * log2(n)) / sum(n) AS entropy_bits,
           sum(CASE WHEN r <= ceil(run_slots.n_slots / 100.0) THEN n ELSE 0 END) AS hot1,
           max(run_slots.n_slots) AS n_slots
    FROM ranked JOIN run_slots ON ranked.run = run_slots.run
    GROUP BY ranked.run, layer, head
), ops AS (  -- a read is warm when its slot was written at this or an earlier position
    SELECT ev.run, ev.layer, ev.head,
           sum(CASE WHEN ev.op = 0 THEN 1 ELSE 0 END) AS writes,
           sum(CASE WHEN ev.op = 1 THEN 1 ELSE 0 END) AS reads,
           sum(CASE WHEN ev.op = 1 AND s.first_write <= ev.pos THEN 1 ELSE 0 END) AS warm_reads
    FROM ev JOIN per_slot s
      ON ev.run = s.run AND ev.layer = s.layer AND ev.head = s.head AND ev.slot = s.slot
    GROUP BY ev.run, ev.layer, ev.head
)
SELECT slots.run, slots.layer, slots.head, events, writes, reads, distinct_slots AS "distinct",
       distinct_slots / n_slots AS used_share, entropy_bits, hot1 / events AS hot1_share,
       warm_reads, reads - warm_reads AS cold_reads
FROM slots JOIN ops ON slots.run = ops.run AND slots.layer = ops.layer AND slots.head = ops.head
ORDER BY slots.run, slots.layer, slots.head;
