#include "convolutions.hpp"

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

int parameter(const cv::dnn::LayerParams &params, const std::string &name, int fallback) {
    return params.has(name) ? params.get(name).get<int>(0) : fallback;
}

// A convolution with one weight row per output channel, a bias, and what OpenCV fuses into a convolution: a BatchNorm
// or Scale folded into the weights, an activation applied to the outputs. A new set-up of the network (another input
// shape) detaches them (`unsetAttached`) and fuses again.
class FusableConvolution : public cv::dnn::Layer {
public:
    explicit FusableConvolution(const cv::dnn::LayerParams &params) : cv::dnn::Layer(params) {
        const cv::Mat &weights = params.blobs[0];
        outputs_ = weights.size[0];
        originalWeights_ = weights.reshape(1, outputs_).clone();
        originalBias_ = params.blobs.size() > 1 ? params.blobs[1].reshape(1, 1).clone() : cv::Mat::zeros(1, outputs_, CV_32F);
        FusableConvolution::unsetAttached();
    }

    void unsetAttached() override {
        weights_ = originalWeights_.clone();
        bias_ = originalBias_.clone();
        activation_ = Activation();
    }

    bool tryFuse(cv::Ptr<cv::dnn::Layer> &top) override {
        if (activation_.kind != Activation::none || (top->type != "BatchNorm" && top->type != "Scale")) return false;
        cv::Mat scale, shift;
        top->getScaleShift(scale, shift);
        const auto fits = [&](const cv::Mat &m) {
            return m.empty() || (m.type() == CV_32F && (m.total() == 1 || static_cast<int>(m.total()) == outputs_));
        };
        if ((scale.empty() && shift.empty()) || !fits(scale) || !fits(shift)) return false;
        for (int o = 0; o < outputs_; ++o) {
            const float s = scale.empty() ? 1.f : scale.ptr<float>()[scale.total() == 1 ? 0 : o];
            const float t = shift.empty() ? 0.f : shift.ptr<float>()[shift.total() == 1 ? 0 : o];
            float *row = weights_.ptr<float>(o);
            for (int i = 0; i < weights_.cols; ++i) row[i] *= s;
            bias_.ptr<float>()[o] = bias_.ptr<float>()[o] * s + t;
        }
        return true;
    }

    // The activations these networks use after a convolution: ReLU (leaky or not), ReLU6, PReLU.
    bool setActivation(const cv::Ptr<cv::dnn::ActivationLayer> &layer) override {
        if (!layer) activation_ = Activation();
        if (!layer || activation_.kind != Activation::none) return false;
        if (const auto relu = layer.dynamicCast<cv::dnn::ReLULayer>()) {
            activation_ = {Activation::relu, relu->negativeSlope};
        } else if (const auto relu6 = layer.dynamicCast<cv::dnn::ReLU6Layer>()) {
            activation_ = {Activation::clamp, 0, relu6->minValue, relu6->maxValue};
        } else if ((layer->type == "PReLU" || layer->type == "ChannelsPReLU") && layer->blobs.size() == 1 &&
                   layer->blobs[0].type() == CV_32F && (layer->blobs[0].total() == 1 || static_cast<int>(layer->blobs[0].total()) == outputs_)) {
            activation_ = {Activation::prelu};
            activation_.slopes = layer->blobs[0].reshape(1, 1).clone();
        } else {
            return false;
        }
        return true;
    }

    bool getMemoryShapes(const std::vector<cv::dnn::MatShape> &inputs, int, std::vector<cv::dnn::MatShape> &outputs,
                         std::vector<cv::dnn::MatShape> &) const override {
        CV_Assert(inputs.size() == 1 && inputs[0].size() == 4);
        outputs.assign(1, outputShape(inputs[0]));
        return false;
    }

    void forward(cv::InputArrayOfArrays inputsArray, cv::OutputArrayOfArrays outputsArray, cv::OutputArrayOfArrays) override {
        std::vector<cv::Mat> inputs, outputs;
        inputsArray.getMatVector(inputs);
        outputsArray.getMatVector(outputs);
        CV_Assert(inputs.size() == 1 && outputs.size() == 1 && inputs[0].type() == CV_32F && inputs[0].isContinuous() &&
                  outputs[0].isContinuous());
        run(inputs[0], outputs[0]);
    }

protected:
    // The output's NCHW shape for an input of `shape`.
    virtual cv::dnn::MatShape outputShape(cv::dnn::MatShape shape) const = 0;
    // One NCHW float input to its output.
    virtual void run(const cv::Mat &input, cv::Mat &output) const = 0;

    // Adds channel `channel`'s bias to `count` values and applies the activation, in one pass.
    void finish(float *values, int count, int channel) const {
        const float bias = bias_.ptr<float>()[channel];
        switch (activation_.kind) {
        case Activation::none:
            for (int i = 0; i < count; ++i) values[i] += bias;
            break;
        case Activation::relu:
            for (int i = 0; i < count; ++i) values[i] = leaky(values[i] + bias, activation_.slope);
            break;
        case Activation::prelu: {
            const float slope = activation_.slopes.ptr<float>()[activation_.slopes.total() == 1 ? 0 : channel];
            for (int i = 0; i < count; ++i) values[i] = leaky(values[i] + bias, slope);
            break;
        }
        case Activation::clamp:
            for (int i = 0; i < count; ++i) values[i] = std::min(std::max(values[i] + bias, activation_.low), activation_.high);
            break;
        }
    }

    int outputs_ = 0;
    cv::Mat weights_;  // one row per output channel, with what is fused into it
    cv::Mat bias_;     // 1 × outputs

private:
    struct Activation {
        enum Kind { none, relu, prelu, clamp } kind = none;
        float slope = 0, low = 0, high = 0;  // relu: the slope below 0; clamp: the bounds
        cv::Mat slopes;                       // prelu: one per channel, or one for all
    };

    static float leaky(float value, float slope) { return value > 0 ? value : value * slope; }

    cv::Mat originalWeights_, originalBias_;
    Activation activation_;
};

// A 1×1 convolution as products of OpenBLAS's sgemm, (outputs × inputs) · (inputs × pixels), a tile at a time.
class PointwiseConvolution final : public FusableConvolution {
public:
    explicit PointwiseConvolution(const cv::dnn::LayerParams &params) : FusableConvolution(params), inputs_(params.blobs[0].size[1]) {}

private:
    cv::dnn::MatShape outputShape(cv::dnn::MatShape shape) const override {
        CV_Assert(shape[1] == inputs_);
        shape[1] = outputs_;
        return shape;
    }

    void run(const cv::Mat &input, cv::Mat &output) const override {
        const int pixels = input.size[2] * input.size[3];
        const int tiles = (pixels + kTile - 1) / kTile;
        // One stripe per thread OpenCV may use now (one while other analyses run: see ThreadGate): tiles of pixels, or,
        // where there are fewer tiles than threads (the last layers' 7×7 maps), output channels.
        const int threads = std::max(1, cv::getNumThreads());
        const bool byChannel = tiles < threads && outputs_ >= 2 * threads;
        const int stripes = byChannel ? threads : std::min(threads, tiles);
        const auto share = [&](int total, int stripe) { return static_cast<int>(static_cast<int64_t>(total) * stripe / stripes); };
        for (int n = 0; n < input.size[0]; ++n) {
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

    // Output channels [first, last) of pixels [start, start + count): the product, then bias and activation.
    void multiply(const float *in, float *out, int pixels, int start, int count, int first, int last) const {
        float *corner = out + static_cast<size_t>(first) * pixels + start;
        cblas_sgemm(kRowMajor, kNoTrans, kNoTrans, last - first, count, inputs_, 1.f, weights_.ptr<float>(first), inputs_, in + start,
                    pixels, 0.f, corner, pixels);
        for (int o = first; o < last; ++o) finish(corner + static_cast<size_t>(o - first) * pixels, count, o);
    }

    int inputs_;
};

// One output row of a 3×3 depthwise convolution over zero-padded input rows: vectorised over the row (AVX2 where the
// machine has it).
__attribute__((target_clones("avx2", "default")))
void depthwiseRow(const float *top, const float *middle, const float *bottom, const float *w, int stride, int width, float *out) {
    if (stride == 1) {
        for (int x = 0; x < width; ++x)
            out[x] = w[0] * top[x] + w[1] * top[x + 1] + w[2] * top[x + 2] + w[3] * middle[x] + w[4] * middle[x + 1] +
                     w[5] * middle[x + 2] + w[6] * bottom[x] + w[7] * bottom[x + 1] + w[8] * bottom[x + 2];
        return;
    }
    for (int x = 0; x < width; ++x) {
        const int s = 2 * x;
        out[x] = w[0] * top[s] + w[1] * top[s + 1] + w[2] * top[s + 2] + w[3] * middle[s] + w[4] * middle[s + 1] +
                 w[5] * middle[s + 2] + w[6] * bottom[s] + w[7] * bottom[s + 1] + w[8] * bottom[s + 2];
    }
}

// A 3×3 depthwise convolution, stride 1 or 2, one pixel of zero padding: each channel copied into a padded plane, then
// its rows computed directly. Channels are shared among OpenCV's threads.
class DepthwiseConvolution final : public FusableConvolution {
public:
    explicit DepthwiseConvolution(const cv::dnn::LayerParams &params)
        : FusableConvolution(params), stride_(parameter(params, "stride", 1)) {}

private:
    cv::dnn::MatShape outputShape(cv::dnn::MatShape shape) const override {
        CV_Assert(shape[1] == outputs_);
        shape[2] = (shape[2] + 2 - 3) / stride_ + 1;
        shape[3] = (shape[3] + 2 - 3) / stride_ + 1;
        return shape;
    }

    void run(const cv::Mat &input, cv::Mat &output) const override {
        const int height = input.size[2], width = input.size[3];
        const int outHeight = output.size[2], outWidth = output.size[3];
        const int paddedWidth = width + 2;
        const int channels = input.size[0] * outputs_;
        const int stripes = std::max(1, std::min(cv::getNumThreads(), channels));
        cv::parallel_for_(cv::Range(0, stripes), [&](const cv::Range &range) {
            std::vector<float> padded(static_cast<size_t>(height + 2) * paddedWidth, 0.f);
            for (int stripe = range.start; stripe < range.end; ++stripe) {
                const int first = static_cast<int>(static_cast<int64_t>(channels) * stripe / stripes);
                const int last = static_cast<int>(static_cast<int64_t>(channels) * (stripe + 1) / stripes);
                for (int plane = first; plane < last; ++plane) {
                    const int channel = plane % outputs_;
                    const float *in = input.ptr<float>() + static_cast<size_t>(plane) * height * width;
                    float *out = output.ptr<float>() + static_cast<size_t>(plane) * outHeight * outWidth;
                    for (int y = 0; y < height; ++y) std::copy_n(in + static_cast<size_t>(y) * width, width, &padded[(y + 1) * paddedWidth + 1]);
                    const float *w = weights_.ptr<float>(channel);
                    for (int y = 0; y < outHeight; ++y) {
                        const float *top = &padded[static_cast<size_t>(y * stride_) * paddedWidth];
                        float *row = out + static_cast<size_t>(y) * outWidth;
                        depthwiseRow(top, top + paddedWidth, top + 2 * paddedWidth, w, stride_, outWidth, row);
                        finish(row, outWidth, channel);
                    }
                }
            }
        }, stripes);
    }

    int stride_;
};

}  // namespace

namespace {

cv::Ptr<cv::dnn::Layer> create(cv::dnn::LayerParams &params, bool depthwise) {
    const bool usable = params.blobs.size() >= 1 && params.blobs[0].dims == 4 && params.blobs[0].type() == CV_32F &&
                        allEqual(params, "dilation", 1) && !params.has("pad_mode") &&
                        (params.blobs.size() == 1 || params.blobs[1].total() == static_cast<size_t>(params.blobs[0].size[0]));
    if (usable) {
        const cv::Mat &weights = params.blobs[0];
        const int outputs = weights.size[0];
        if (weights.size[2] == 1 && weights.size[3] == 1 && allEqual(params, "kernel_size", 1) && allEqual(params, "stride", 1) &&
            allEqual(params, "pad", 0) && allEqual(params, "group", 1))
            return cv::makePtr<PointwiseConvolution>(params);
        if (depthwise && weights.size[1] == 1 && weights.size[2] == 3 && weights.size[3] == 3 && allEqual(params, "kernel_size", 3) &&
            allEqual(params, "pad", 1) && parameter(params, "group", 1) == outputs && outputs > 1 &&
            (allEqual(params, "stride", 1) || allEqual(params, "stride", 2)))
            return cv::makePtr<DepthwiseConvolution>(params);
    }
    return cv::dnn::ConvolutionLayer::create(params);
}

}  // namespace

cv::Ptr<cv::dnn::Layer> createConvolution(cv::dnn::LayerParams &params) { return create(params, true); }

cv::Ptr<cv::dnn::Layer> createPointwiseConvolution(cv::dnn::LayerParams &params) { return create(params, false); }

}  // namespace faceengine
