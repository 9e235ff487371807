// 1×1 convolutions of the SFace engine's networks as OpenBLAS matrix products.
//
// YuNet and SFace are depthwise-separable networks: most of their time goes to 1×1 convolutions (measured on the
// AMD EPYC machine, one thread: 18 of SFace's 25 ms, 19–22 of YuNet's 36 ms on a 1024-pixel copy), which are
// matrix products (output channels × input channels) · (input channels × pixels). OpenCV 4.6's own kernel ran them
// at 0.55–0.6× the speed of OpenBLAS's sgemm on the same shapes. Registered as OpenCV's "Convolution" layer while the
// engine loads its networks, `createConvolution` answers a `PointwiseConvolution` for a 1×1, stride-1, unpadded,
// ungrouped convolution with constant weights, and OpenCV's own layer for every other.
#pragma once

#include <opencv2/dnn.hpp>

namespace faceengine {

// The "Convolution" layer factory to register while networks are read (cv::dnn::LayerFactory::registerLayer).
cv::Ptr<cv::dnn::Layer> createConvolution(cv::dnn::LayerParams &params);

}  // namespace faceengine
