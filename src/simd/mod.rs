pub mod quant;
pub mod matmul;
pub mod cpu_features;
