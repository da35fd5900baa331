"""Reads TOML job configs with torchtitan's own code at 9dec370 and prints what torchtitan runs.

For each TOML (actmem's --emit torchtitan outputs in tests/data/torchtitan/emitted/, and
torchtitan's own train_configs), this runs torchtitan 9dec370's JobConfig.parse_args on it,
ParallelDims' validation for the given world size, the activation-checkpointing option checks of
parallelize_llama.py (_apply_ac_to_transformer_block), and for pipelining torch's
get_schedule_class, torchtitan's generate_split_points (when the TOML gives none) and
stage_ids_this_rank; it prints, as JSON, the degrees, the local batch, the micro-batches, each
stage's layers, the ranks' stage ids and the AC and float8 settings.
tests/frameworks/test_torchtitan_toml.cpp reads the output (tests/reference/torchtitan_parsed.json) and
checks that actmem's reader gives the same layout.

Needs torch (2.6 here, from the Debian 13 root: ../shared/toolchain.md) and torchtitan 9dec370's
torchtitan/config_manager.py, logging.py, parallelisms/parallel_dims.py and
parallelisms/pipelining_utils.py copied under TORCHTITAN_DIR/torchtitan/ (with an empty
parallelisms/__init__.py: the real one imports the whole training stack).

Usage: python3 torchtitan_parse.py TORCHTITAN_DIR DATA_DIR CASES_JSON > torchtitan_parsed.json
where CASES_JSON (tests/reference/torchtitan_cases.json) lists {"name", "toml" (a path under
DATA_DIR, tests/data/torchtitan/), "world_size", "n_layers"}, and for actmem's own TOMLs the
preset and config they were emitted from.
"""

import json
import sys
import types


def main():
    sys.path.insert(0, sys.argv[1])
    from torchtitan.config_manager import JobConfig
    from torchtitan.parallelisms.parallel_dims import ParallelDims
    from torchtitan.parallelisms.pipelining_utils import (
        generate_split_points,
        stage_ids_this_rank,
    )
    from torch.distributed.pipelining.schedules import (
        PipelineScheduleMulti,
        get_schedule_class,
    )

    data_dir = sys.argv[2]
    cases = json.load(open(sys.argv[3]))
    out = []
    for case in cases:
        jc = JobConfig()
        jc.parse_args(["--job.config_file", data_dir + "/" + case["toml"]])
        t, e, ac, f8 = jc.training, jc.experimental, jc.activation_checkpoint, jc.float8
        dims = ParallelDims(
            dp_replicate=t.data_parallel_replicate_degree,
            dp_shard=t.data_parallel_shard_degree,
            cp=e.context_parallel_degree,
            tp=t.tensor_parallel_degree,
            pp=e.pipeline_parallel_degree,
            world_size=case["world_size"],
            enable_loss_parallel=not t.disable_loss_parallel,
        )
        # parallelize_llama.py l.225-246: the modes and options it accepts.
        assert ac.mode in ("none", "full", "selective"), ac.mode
        if ac.mode == "selective":
            assert ac.selective_ac_option == "op" or ac.selective_ac_option.isdigit()
        row = {
            "name": case["name"],
            "dp_replicate": dims.dp_replicate,
            "dp_shard": dims.dp_shard,
            "cp": dims.cp,
            "tp": dims.tp,
            "pp": dims.pp,
            "batch_size": t.batch_size,
            "seq_len": t.seq_len,
            "mixed_precision_param": t.mixed_precision_param,
            "compile": t.compile,
            "ac_mode": ac.mode,
            "ac_option": ac.selective_ac_option,
            "float8": f8.enable_float8_linear,
            "float8_all_gather": f8.enable_fsdp_float8_all_gather,
        }
        if dims.pp > 1:
            cls = get_schedule_class(e.pipeline_parallel_schedule)
            model = types.SimpleNamespace(n_layers=case["n_layers"])
            splits = e.pipeline_parallel_split_points or generate_split_points(
                jc, dims.pp, model
            )
            cuts = [0] + [int(s.split(".")[1]) for s in splits] + [case["n_layers"]]
            row["schedule"] = cls.__name__
            row["looped"] = issubclass(cls, PipelineScheduleMulti)
            row["stage_layers"] = [b - a for a, b in zip(cuts, cuts[1:])]
            row["rank_stages"] = [
                list(stage_ids_this_rank(r, dims.pp, len(splits) + 1, style="loop"))
                for r in range(dims.pp)
            ]
            # pipelining_utils.py l.79-81: the micro-batches default to the pipeline degree.
            mb = e.pipeline_parallel_microbatches
            row["n_microbatches"] = mb if mb is not None else dims.pp
        out.append(row)
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
