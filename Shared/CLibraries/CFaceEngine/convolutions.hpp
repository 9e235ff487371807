// Convolutions of the SFace engine's networks, faster than OpenCV 4.6's own kernels on their shapes.
//
// YuNet and SFace are depthwise-separable networks: 1×1 convolutions and 3×3 depthwise ones. Measured on the AMD EPYC
// machine, one thread, OpenCV 4.6: the 1×1 convolutions took 18 of SFace's 25 ms and 19–22 of YuNet's 36 ms on a
// 1024-pixel copy, at 0.55–0.6× the speed of OpenBLAS's sgemm on the same shapes; SFace's depthwise convolutions on
// its 14×14 maps of 512 channels took 1.1 ms each, against 0.3 ms in OpenCV 4.10. Registered as OpenCV's
// "Convolution" layer while the engine reads its networks, `createConvolution` answers:
// - for a 1×1, stride-1, unpadded, ungrouped convolution: a product of OpenBLAS's sgemm, tile by tile;
// - for a 3×3 depthwise convolution (one group per channel, stride 1 or 2, one pixel of zero padding): a direct loop
//   over each channel's rows, which took SFace from 21.5 to 17.6 ms but YuNet's large maps from 6 to 7 ms;
// - OpenCV's own layer for every other.
// `createPointwiseConvolution` leaves depthwise convolutions to OpenCV (for YuNet).
// Both fold a following BatchNorm or Scale into their weights, as OpenCV's layer does, and add the bias and apply a
// following ReLU, ReLU6 or PReLU in one pass over each output row while it is in cache; their results differ from
// OpenCV's only by float rounding.
#pragma once

#include <opencv2/dnn.hpp>

namespace faceengine {

// The "Convolution" layer factories to register while a network is read (cv::dnn::LayerFactory::registerLayer).
cv::Ptr<cv::dnn::Layer> createConvolution(cv::dnn::LayerParams &params);
cv::Ptr<cv::dnn::Layer> createPointwiseConvolution(cv::dnn::LayerParams &params);

}  // namespace faceengine
