// Stand-in for a generated accelerator (tests/test_fpga_*.py): the port shape of the new
// accelerator (two input streams, one output stream, a counter, a probe input) and a block RAM.
// results = inputs + config + history[slot], where history (256 x 16, zero-initialised) keeps
// every input; the first 256 results therefore equal inputs + config.
module accelerator(
  input clk, input rst,
  input [11:0] inputs__payload, input inputs__valid, output inputs__ready,
  input [3:0] config__payload, input config__valid, output config__ready,
  output reg [19:0] results__payload, output reg results__valid, input results__ready,
  output reg [31:0] cycle_count, input [2:0] probe_select
);
  reg [3:0] cfg;
  reg [7:0] slot;
  reg [15:0] history [0:255];
  reg [15:0] old;
  reg [11:0] pending;
  reg busy;
  integer i;
  initial for (i = 0; i < 256; i = i + 1) history[i] = 16'd0;
  assign config__ready = 1'b1;
  assign inputs__ready = ~busy & ~results__valid;
  always @(posedge clk) begin
    old <= history[slot];
    if (rst) begin
      cfg <= 0; slot <= 0; busy <= 0; results__valid <= 0; cycle_count <= 0;
    end else begin
      cycle_count <= cycle_count + 1 + probe_select;
      if (config__valid) cfg <= config__payload;
      if (inputs__valid & inputs__ready) begin
        history[slot] <= {4'd0, inputs__payload};
        pending <= inputs__payload;
        busy <= 1;
      end
      if (busy) begin
        results__payload <= pending + cfg + old;
        results__valid <= 1;
        slot <= slot + 1;
        busy <= 0;
      end
      if (results__valid & results__ready) results__valid <= 0;
    end
  end
endmodule
