#include "pointwise_convolution.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/dnn/all_layers.hpp>
#include <opencv2/dnn/shape_utils.hpp>

// OpenBLAS's sgemm, declared here rather than through <cblas.h>, whose declarations clash with dlib's BLAS bindings.
extern "C" void cblas_sgemm(int order, int transA, int transB, int m, int n, int k, float alpha, const float *a, int lda,
                            const float *b, int ldb, float beta, float *c, int ldc);

namespace faceengine {
namespace {

constexpr int kRowMajor = 101, kNoTrans = 111;
// Pixels per product: the tile's outputs are still in cache when the bias and the activation are applied to them.
constexpr int kTile = 256;

// Every value of an integer parameter (a list or a single value) equals `expected`; absent counts as `expected`.
bool allEqual(const cv::dnn::LayerParams &params, const std::string &name, int expected) {
    if (!params.has(name)) return true;
    const cv::dnn::DictValue &value = params.get(name);
    for (int i = 0; i < value.size(); ++i)
        if (value.get<int>(i) != expected) return false;
    return true;
}

class PointwiseConvolution final : public cv::dnn::Layer {
public:
    explicit PointwiseConvolution(const cv::dnn::LayerParams &params) : cv::dnn::Layer(params) {
        const cv::Mat &weights = params.blobs[0];
        outputs_ = weights.size[0];
        inputs_ = weights.size[1];
        originalWeights_ = weights.reshape(1, outputs_).clone();
        originalBias_ = params.blobs.size() > 1 ? params.blobs[1].reshape(1, 1).clone() : cv::Mat::zeros(1, outputs_, CV_32F);
        unsetAttached();
    }

    // What a new set-up of the network (another input shape) starts from: the layer as read, nothing fused into it.
    void unsetAttached() override {
        weights_ = originalWeights_.clone();
        bias_ = originalBias_.clone();
        activation_.release();
    }

    bool getMemoryShapes(const std::vector<cv::dnn::MatShape> &inputs, int, std::vector<cv::dnn::MatShape> &outputs,
                         std::vector<cv::dnn::MatShape> &) const override {
        CV_Assert(inputs.size() == 1 && inputs[0].size() == 4 && inputs[0][1] == inputs_);
        cv::dnn::MatShape shape = inputs[0];
        shape[1] = outputs_;
        outputs.assign(1, shape);
        return false;
    }

    // A BatchNorm or Scale after it: folded into the weights and the bias, as OpenCV's own layer does.
    bool tryFuse(cv::Ptr<cv::dnn::Layer> &top) override {
        if (activation_ || (top->type != "BatchNorm" && top->type != "Scale")) return false;
        cv::Mat scale, shift;
        top->getScaleShift(scale, shift);
        const auto fits = [&](const cv::Mat &m) { return m.empty() || m.total() == 1 || static_cast<int>(m.total()) == outputs_; };
        if (scale.empty() && shift.empty()) return false;
        if (!fits(scale) || !fits(shift) || (!scale.empty() && scale.type() != CV_32F) || (!shift.empty() && shift.type() != CV_32F))
            return false;
        for (int o = 0; o < outputs_; ++o) {
            const float s = scale.empty() ? 1.f : scale.ptr<float>()[scale.total() == 1 ? 0 : o];
            const float t = shift.empty() ? 0.f : shift.ptr<float>()[shift.total() == 1 ? 0 : o];
            float *row = weights_.ptr<float>(o);
            for (int i = 0; i < inputs_; ++i) row[i] *= s;
            bias_.ptr<float>()[o] = bias_.ptr<float>()[o] * s + t;
        }
        return true;
    }

    // The activations these networks use after a 1×1 convolution, applied to each tile in place.
    bool setActivation(const cv::Ptr<cv::dnn::ActivationLayer> &layer) override {
        if (!layer) activation_.release();
        if (activation_ || !layer || (layer->type != "ReLU" && layer->type != "ChannelsPReLU" && layer->type != "ReLU6"))
            return false;
        activation_ = layer;
        return true;
    }

    void forward(cv::InputArrayOfArrays inputsArray, cv::OutputArrayOfArrays outputsArray, cv::OutputArrayOfArrays) override {
        std::vector<cv::Mat> inputs, outputs;
        inputsArray.getMatVector(inputs);
        outputsArray.getMatVector(outputs);
        const cv::Mat &input = inputs[0];
        cv::Mat &output = outputs[0];
        CV_Assert(input.type() == CV_32F && input.isContinuous() && output.isContinuous());
        const int batch = input.size[0];
        const int pixels = input.size[2] * input.size[3];
        const int tiles = (pixels + kTile - 1) / kTile;
        // One stripe per thread OpenCV may use now (one while other analyses run: see ThreadGate): tiles of pixels, or,
        // where there are fewer tiles than threads (the last layers' 7×7 maps), output channels.
        const int threads = std::max(1, cv::getNumThreads());
        const bool byChannel = tiles < threads && outputs_ >= 2 * threads;
        const int stripes = byChannel ? threads : std::min(threads, tiles);
        const auto share = [&](int total, int stripe) { return static_cast<int>(static_cast<int64_t>(total) * stripe / stripes); };
        for (int n = 0; n < batch; ++n) {
            const float *in = input.ptr<float>(n);
            float *out = output.ptr<float>(n);
            cv::parallel_for_(cv::Range(0, stripes), [&](const cv::Range &range) {
                for (int stripe = range.start; stripe < range.end; ++stripe) {
                    if (byChannel) {
                        multiply(in, out, pixels, 0, pixels, share(outputs_, stripe), share(outputs_, stripe + 1));
                        continue;
                    }
                    for (int tile = share(tiles, stripe); tile < share(tiles, stripe + 1); ++tile)
                        multiply(in, out, pixels, tile * kTile, std::min(kTile, pixels - tile * kTile), 0, outputs_);
                }
            }, stripes);
        }
    }

private:
    // Output channels [first, last) of pixels [start, start + count): bias, then the product added to it, then the activation.
    void multiply(const float *in, float *out, int pixels, int start, int count, int first, int last) const {
        const float *bias = bias_.ptr<float>();
        float *corner = out + static_cast<size_t>(first) * pixels + start;
        for (int o = first; o < last; ++o) std::fill_n(out + static_cast<size_t>(o) * pixels + start, count, bias[o]);
        cblas_sgemm(kRowMajor, kNoTrans, kNoTrans, last - first, count, inputs_, 1.f, weights_.ptr<float>(first), inputs_, in + start,
                    pixels, 1.f, corner, pixels);
        if (activation_) activation_->forwardSlice(corner, corner, count, static_cast<size_t>(pixels), first, last);
    }

    int outputs_ = 0, inputs_ = 0;
    cv::Mat originalWeights_, originalBias_;
    cv::Mat weights_;  // outputs × inputs, with what is fused into it
    cv::Mat bias_;     // 1 × outputs
    cv::Ptr<cv::dnn::ActivationLayer> activation_;
};

}  // namespace

cv::Ptr<cv::dnn::Layer> createConvolution(cv::dnn::LayerParams &params) {
    const bool pointwise = params.blobs.size() >= 1 && params.blobs[0].dims == 4 && params.blobs[0].type() == CV_32F &&
                           params.blobs[0].size[2] == 1 && params.blobs[0].size[3] == 1 && allEqual(params, "kernel_size", 1) &&
                           allEqual(params, "stride", 1) && allEqual(params, "dilation", 1) && allEqual(params, "pad", 0) &&
                           allEqual(params, "group", 1) && !params.has("pad_mode") &&
                           (params.blobs.size() == 1 || params.blobs[1].total() == static_cast<size_t>(params.blobs[0].size[0]));
    if (pointwise) return cv::makePtr<PointwiseConvolution>(params);
    return cv::dnn::ConvolutionLayer::create(params);
}

}  // namespace faceengine
