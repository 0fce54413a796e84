# Tests labelled "long": each took more than 1 s in the Release build on the project's 2-core
# machine (ctest's Testing/Temporary/CTestCostData.txt after `ctest -j2` at 90fea95; the figure
# after each name, in seconds). They run whole validation tables, thousands of simulated GPUs, or
# calibration fits that re-simulate every row, so they repeat the code paths the short tests take
# many times over. tools/test's sanitizer pass leaves them out (`ctest -LE long`): under
# ASan+UBSan they ran 7-26 times slower than in Release (the two CI runs of session 32:
# unit.nccl_cross_prediction 1,199-1,248 s, cli.validate_megatron_runs_large 604-722 s;
# cli.compare_sharded 17 s against 0.63 s) and took .ci/run past its 90 minutes. The Release pass
# runs them all. Bad-input tests (bad.*) are never labelled: refusing bad input cleanly is what the
# sanitizer pass is for.
# A new test that takes more than 1 s in Release belongs here.
set(DTSIM_LONG_TESTS
  cli.calibrate_dgx1_e2e  # 2.2
  cli.calibrate_json  # 2.7
  cli.calibrate_settings_above_tables  # 1.3
  cli.calibrate_subset_two_tables  # 1.3
  cli.calibration_rows_reproduce_measurements  # 49.2
  cli.compare_batches_differ  # 1.8
  cli.compare_offloads  # 1.5
  cli.compare_own_strategy_keeps_settings  # 2.9
  cli.compare_stage3_member_zero3_only  # 1.2
  cli.ddp_plan_too_large  # 4.8
  cli.explain_ddp_plan_too_large  # 3.9
  cli.run_checkpointing_true_is_full  # 4.1
  cli.run_ddp_recomputes  # 12.4
  cli.run_fsdp_32gpu_auto_all_ranks  # 3.1
  cli.run_fsdp_405b_one_node_offload_no_fit  # 1.1
  cli.run_fsdp_70b_one_node_suggests_offload  # 1.1
  cli.run_gpt_1t_3072gpu_folded  # 41.7
  cli.run_html_gpus_shown_folded  # 1.8
  cli.run_html_gpus_shown_folded_away  # 2.0
  cli.run_hybrid_auto_folds  # 2.0
  cli.run_imagenet_32gpu  # 1.6
  cli.run_imagenet_32gpu_json  # 1.6
  cli.run_imagenet_32gpu_v100_step  # 1.7
  cli.run_inline_model_as_named  # 7.6
  cli.run_selective_layer_suggests_full  # 1.0
  cli.run_single_gpu_does_not_fit  # 2.6
  cli.run_single_gpu_does_not_fit_ddp  # 1.8
  cli.run_zero1_accumulating_no_fit  # 2.0
  cli.run_zero3_offload  # 6.1
  cli.run_zero3_offload_pageable  # 4.7
  cli.run_zero3_offload_pageable_calibrated  # 4.8
  cli.run_zero3_offload_param  # 5.5
  cli.run_zero3_scenario  # 6.6
  cli.run_zero3_zeropp  # 2.1
  cli.sweep_grid_nic_gpus  # 3.0
  cli.sweep_imagenet  # 1.1
  cli.sweep_zero3_offload_host  # 7.6
  cli.validate_calibrated_dgx1  # 2.1
  cli.validate_fsdp_microbatch_foundry  # 1.1
  cli.validate_fsdp_runs  # 7.0
  cli.validate_fsdp_runs_fms  # 3.9
  cli.validate_fsdp_runs_foundry  # 56.0
  cli.validate_fsdp_runs_kempner  # 60.5
  cli.validate_fsdp_runs_large  # 14.5
  cli.validate_fsdp_runs_torchtitan  # 3.0
  cli.validate_fsdp_seqlen_foundry  # 21.2
  cli.validate_megatron_runs  # 5.7
  cli.validate_megatron_runs_large  # 101.0
  cli.validate_megatron_weak_scaling  # 105.4
  cli.validate_plan_from_one_run  # 4.3 (session 35, alone; validate_fsdp_runs took 5.0 then, 7.0 above)
  cli.validate_training_runs_json  # 4.8
  cli.validate_zero_runs_autotuning  # 1.7
  unit.calibration_wiring  # 37.5
  unit.collective_replay_cross_check  # 26.9
  unit.collective_symmetry  # 4.6
  unit.efficiency_calibration  # 1.4 (session 35, alone)
  unit.memory_saved_tensors  # 15.9
  unit.nccl_cross_prediction  # 188.8
  unit.nccl_fit_recovery  # 14.1
  unit.nccl_validation  # 18.0
  unit.rank_folding_cross_check  # 28.1
  unit.steady_state_cross_check  # 10.8
  unit.strategy_megatron  # 65.0
  unit.strategy_sharded  # 7.7
  unit.training_runs_validation  # 4.4
)

# dtsim_label_long_tests(): labels the tests of DTSIM_LONG_TESTS defined in the calling directory
# (CMake 3.25 sets test properties only where the test was added).
function(dtsim_label_long_tests)
  foreach(test IN LISTS DTSIM_LONG_TESTS)
    if(TEST ${test})
      set_tests_properties(${test} PROPERTIES LABELS long)
    endif()
  endforeach()
endfunction()
