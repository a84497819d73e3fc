-- The runs the line series of comparisons/regressions read (pipeline.comparisons.regressions.line_series): one
-- row per accepted, dated run (run_metrics holds one per price book; the line metrics do not depend on it), runs
-- whose lengths are off nominal left out as on every frontier (sql/run_lengths.sql). Units: tok/s/GPU, seconds.
select run_id, line_id, sweep_id, run_date, conc, model, isl, osl, hw, framework, precision, spec_decoding,
       benchmark_type, run_url, source_file, tput_per_gpu, median_tpot_s, p99_ttft_s
from run_metrics
where run_date is not null and not length_off_nominal
qualify row_number() over (partition by run_id order by price_book) = 1
order by run_date, line_id, sweep_id, conc, run_id
