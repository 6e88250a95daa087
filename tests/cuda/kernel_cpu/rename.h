/* SPDX-License-Identifier: MIT */
/*
 * The names the kernels' C interface (src/cuda/kernels.h) and the
 * compressed all-reduce's GPU path (src/compress/allreduce_gpu.h) take on
 * the kernel stand-in, for every file of its suites (given with -include):
 * a build with CUDA also links the real ones, through the library.
 */
#ifndef TT_TEST_KCPU_RENAME_H
#define TT_TEST_KCPU_RENAME_H

#define tt_cuda_reduce tt_kcpu_cuda_reduce
#define tt_cuda_scale tt_kcpu_cuda_scale
#define tt_cuda_avg_finish tt_kcpu_cuda_avg_finish
#define tt_cuda_quant_encode tt_kcpu_cuda_quant_encode
#define tt_cuda_quant_scratch tt_kcpu_cuda_quant_scratch
#define tt_cuda_quant_decode tt_kcpu_cuda_quant_decode
#define tt_cuda_topk_exact tt_kcpu_cuda_topk_exact
#define tt_cuda_topk_scratch tt_kcpu_cuda_topk_scratch
#define tt_cuda_topk_sampled tt_kcpu_cuda_topk_sampled
#define tt_cuda_topk_sampled_scratch tt_kcpu_cuda_topk_sampled_scratch
#define tt_cuda_to_f32 tt_kcpu_cuda_to_f32
#define tt_cuda_from_f32 tt_kcpu_cuda_from_f32
#define tt_cuda_pairs_pack tt_kcpu_cuda_pairs_pack
#define tt_cuda_pairs_add tt_kcpu_cuda_pairs_add
#define tt_cuda_divide tt_kcpu_cuda_divide
#define tt_cuda_wait_ticket tt_kcpu_cuda_wait_ticket
#define tt_cuda_signal_ticket tt_kcpu_cuda_signal_ticket
#define tt_cuda_preload tt_kcpu_cuda_preload
#define tt_cuda_wait_preload tt_kcpu_cuda_wait_preload
#define tt_cuda_reduce_preload tt_kcpu_cuda_reduce_preload
#define tt_cuda_compress_preload tt_kcpu_cuda_compress_preload
#define tt_cuda_compress_coll_preload tt_kcpu_cuda_compress_coll_preload
#define tt_cuda_scale_preload tt_kcpu_cuda_scale_preload
#define tt_compress_gpu_plan tt_kcpu_compress_gpu_plan
#define tt_compress_gpu_before tt_kcpu_compress_gpu_before
#define tt_compress_gpu_after tt_kcpu_compress_gpu_after

#endif
